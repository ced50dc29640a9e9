// pcscd's resident memory over many APDUs to a simulated card: the simulated ACR122U driver
// (Sources/SimulatedACR122IFD) runs inside the private pcscd, as under `secbridge simulate`, so
// whatever the simulated card keeps per APDU shows in pcscd's VmRSS (/proc/<pid>/status, proc(5)).

import Foundation

/// VmRSS of process `pid` in kB, from /proc/<pid>/status; nil when it cannot be read.
func residentKilobytes(pid: Int32) -> Int? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
    for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        return Int(line.dropFirst("VmRSS:".count).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "")
    }
    return nil
}

/// Part "pcscd-rss": `count` APDUs through the C loop in ten chunks, VmRSS read before the first
/// and after every chunk. Gated: growth from start to end at most 5 MB.
func benchmarkPCSCDMemory(pcscd pid: Int32?, reader: String, count: Int, report: Report) {
    report.part("pcscd-rss: pcscd's VmRSS over \(grouped(Double(count))) APDUs to the simulated card (\(reader))")
    let name = "pcscd VmRSS growth over \(grouped(Double(count))) APDUs", goal = "≤ 5 MB"
    guard let pid, let start = residentKilobytes(pid: pid) else {
        report.skipped("pcscd-rss", name, goal: goal, gated: true, reason: "cannot read the private pcscd's /proc/<pid>/status")
        return
    }
    let chunks = 10
    var readings = [start]
    var done = 0
    let began = ContinuousClock.now
    do {
        for chunk in 0..<chunks {
            let size = count / chunks + (chunk < count % chunks ? 1 : 0)
            guard size > 0 else { continue }
            _ = try cTransmitLoop(reader: reader, apdu: selectNDEFApplication, count: size)
            done += size
            guard let now = residentKilobytes(pid: pid) else { throw LoopFailure(description: "pcscd (pid \(pid)) went away") }
            readings.append(now)
        }
    } catch {
        report.skipped("pcscd-rss", name, goal: goal, gated: true, reason: "after \(done) APDUs: \(error)")
        return
    }
    let elapsed = seconds(ContinuousClock.now - began)
    report.detail("VmRSS (MB) at 0, 10 %, … 100 %: " + readings.map { format(Double($0) / 1024, 1) }.joined(separator: " ")
                  + " (\(format(Double(done) / elapsed, 0)) APDU/s)")
    let growth = Double(readings.last! - start) / 1024
    report.figure("pcscd-rss", name, "\(format(growth, 2)) MB (\(format(Double(start) / 1024, 1)) → \(format(Double(readings.last!) / 1024, 1)) MB)",
                  goal: goal, passed: growth <= 5, gated: true)
}
