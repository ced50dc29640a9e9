import Foundation
import ISO7816
import NFCTags
import PN53x
import Transcript
import PCSCCore

#if canImport(Glibc)
import Glibc
#endif

/// A credential file that cannot be used: an open code, the JSON path of the offending value
/// (`$.applets[0].records[1].uri`) and a reason. Equal when the codes are equal.
public struct CredentialFileError: CodedError {
    /// What is wrong with the file (an open set of codes).
    public struct Code: ErrorCode {
        /// The code's name, e.g. `invalidValue`.
        public let rawValue: String
        /// A code by name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The file could not be read.
        public static let unreadable = Code(rawValue: "unreadable")
        /// The text is not JSON.
        public static let syntax = Code(rawValue: "syntax")
        /// A required field is missing.
        public static let missingField = Code(rawValue: "missingField")
        /// A field has the wrong JSON type.
        public static let wrongType = Code(rawValue: "wrongType")
        /// A field's value is not acceptable (bad hex, an AID of the wrong length, an unknown kind).
        public static let invalidValue = Code(rawValue: "invalidValue")
        /// A field this format does not define (a typo?).
        public static let unknownField = Code(rawValue: "unknownField")
        /// `secbridge-credential` is not 1.
        public static let unsupportedVersion = Code(rawValue: "unsupportedVersion")
    }

    /// What is wrong.
    public let code: Code
    /// The JSON path, `$` for the whole document.
    public let path: String
    /// Why, and what to write instead.
    public let reason: String

    /// An error at the JSON path `path`.
    public init(_ code: Code, path: String, _ reason: String) {
        self.code = code
        self.path = path
        self.reason = reason
    }
    /// `$.applets[0].aids[1]: "F0 01" is not an AID …`: the JSON path and the reason.
    public var description: String { "\(path): \(reason)" }
}

/// A credential file (format `secbridge-credential` version 1; Fixtures/credentials/README.md).
public struct CredentialFile: Sendable {
    /// One entry of the file's `applets` array, as read.
    public enum AppletSpec: Sendable {
        /// `"type": "ndef-tag"`: an NFC Forum Type 4 Tag holding `message` (``Type4TagApplet``).
        case ndefTag(name: String, message: NDEFMessage?, readOnly: Bool, capabilityContainer: Type4CapabilityContainer?)
        /// `"type": "declarative"`: rules of command pattern → response (``DeclarativeApplet``).
        case declarative(name: String, aids: [AIDRegistration], select: [UInt8], rules: [DeclarativeApplet.Rule], defaultResponse: [UInt8])
        /// `"type": "transcript"`: the answers of a recorded transcript (``TranscriptApplet``).
        case transcript(name: String?, file: String, aids: [AIDRegistration], defaultResponse: [UInt8])
    }

    /// What answers the terminal: the file's host applets, or a card in a PC/SC reader.
    public enum SecureElementSpec: Sendable {
        /// `"applets"`: host applets in this process.
        case applets([AppletSpec])
        /// `"pcscCard"`: the card in a PC/SC reader, its APDUs relayed (``CardSecureElement``).
        case pcscCard(reader: String, resolveStatusWordsLocally: Bool)
    }

    /// The credential's stable identifier (`id`).
    public var id: String
    /// The name for people (`name`; default the id).
    public var name: String
    /// How the emulated card presents itself (`emulation`).
    public var emulation: CardEmulationOptions
    /// What answers the terminal's APDUs (`applets` or `pcscCard`).
    public var secureElement: SecureElementSpec
    /// The directory relative paths (a transcript applet's `file`) are resolved against.
    public var baseDirectory: String

    /// Parses a credential file's JSON.
    /// - Throws: `CredentialFileError` naming the JSON path of what is wrong.
    public init(json: [UInt8], baseDirectory: String = ".") throws(CredentialFileError) {
        do {
            let document = try JSONDecoder().decode(Document.self, from: Data(json))
            id = document.id
            name = document.name ?? document.id
            emulation = document.emulation
            secureElement = document.secureElement
            self.baseDirectory = baseDirectory
        } catch let error as DecodingError {
            throw Self.translate(error)
        } catch let error as CredentialFileError {
            throw error
        } catch {
            throw CredentialFileError(.invalidValue, path: "$", "\(error)")
        }
    }

    /// Reads and parses a credential file.
    /// - Throws: `CredentialFileError` `unreadable`, or what `init(json:baseDirectory:)` throws.
    public init(contentsOfFile path: String) throws(CredentialFileError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            var info = stat()  // stat(2) follows a symbolic link to what it names
            let why: String
            if stat(path, &info) != 0 {
                why = "no such file"
            } else if info.st_mode & S_IFMT == S_IFDIR {
                why = "it is a directory; give the path of a credential file (*.json) in it"
            } else if info.st_mode & S_IFMT == S_IFREG {
                why = "no permission"
            } else {
                why = "it is not a regular file (a FIFO, a device or a socket); give the path of a credential file (*.json)"
            }
            throw CredentialFileError(.unreadable, path: "$", "cannot read \(path): \(why)")
        }
        let directory = (path as NSString).deletingLastPathComponent
        try self.init(json: Array(data), baseDirectory: directory.isEmpty ? "." : directory)
    }

    /// Builds the credential: its applets (reading transcript files) or its PC/SC card. The
    /// credential's `state` lists one instance per AID a host applet is selected by exactly.
    /// - Parameter pcscCard: makes the secure element for a `pcscCard` file (the CLI passes one
    ///   that connects through pcscd); nil uses `CardSecureElement.pcsc(readerName:)`.
    /// - Throws: `CredentialFileError` (a transcript file that cannot be read or used, an NDEF
    ///   message that does not fit its tag), naming the JSON path.
    public func makeCredential(
        pcscCard: (@Sendable (_ reader: String, _ resolveLocally: Bool) -> any SecureElement)? = nil
    ) throws(CredentialFileError) -> Credential {
        let element: any SecureElement
        var instances: [Credential.InstanceInfo] = []
        switch secureElement {
        case .pcscCard(let reader, let resolve):
            element = pcscCard?(reader, resolve) ?? CardSecureElement.pcsc(readerName: reader, resolveStatusWordsLocally: resolve)
        case .applets(let specs):
            var applets: [any HostApplet] = []
            for (index, spec) in specs.enumerated() {
                applets.append(try makeApplet(spec, path: "$.applets[\(index)]"))
            }
            element = HostSecureElement(applets: applets)
            // Apple's InstanceInfo per AID an applet is selected by exactly (prefixes name no instance).
            instances = applets.flatMap(\.aids).filter { !$0.isPrefix }
                .map { Credential.InstanceInfo(instanceAID: Data($0.bytes), instanceType: .hostApplet) }
        }
        return Credential(id: id, displayName: name, secureElement: element, emulationDefaults: emulation, instances: instances)
    }

    private func makeApplet(_ spec: AppletSpec, path: String) throws(CredentialFileError) -> any HostApplet {
        switch spec {
        case .ndefTag(let name, let message, let readOnly, let cc):
            do {
                return try Type4TagApplet(name: name, message: message, capabilityContainer: cc, readOnly: readOnly)
            } catch {
                throw CredentialFileError(.invalidValue, path: path + ".records", error.reason)
            }
        case .declarative(let name, let aids, let select, let rules, let defaultResponse):
            return DeclarativeApplet(name: name, aids: aids, selectResponse: select, rules: rules, defaultResponse: defaultResponse)
        case .transcript(let name, let file, let aids, let defaultResponse):
            let full = file.hasPrefix("/") ? file : baseDirectory + "/" + file
            let transcript: Transcript
            do {
                transcript = try Transcript(contentsOfFile: full)
            } catch {
                throw CredentialFileError(.invalidValue, path: path + ".file", "\(full): \(error)")
            }
            do {
                return try TranscriptApplet(name: name, transcript: transcript, aids: aids, defaultResponse: defaultResponse)
            } catch {
                throw CredentialFileError(.invalidValue, path: path + ".file", error.reason)
            }
        }
    }

    // MARK: Decoding

    static func jsonPath(_ codingPath: [any CodingKey]) -> String {
        var path = "$"
        for key in codingPath {
            if let index = key.intValue { path += "[\(index)]" } else { path += "." + key.stringValue }
        }
        return path
    }

    private static func translate(_ error: DecodingError) -> CredentialFileError {
        switch error {
        case .keyNotFound(let key, let context):
            return CredentialFileError(
                .missingField, path: jsonPath(context.codingPath + [key]), "the field \"\(key.stringValue)\" is required")
        case .typeMismatch(let type, let context), .valueNotFound(let type, let context):
            return CredentialFileError(.wrongType, path: jsonPath(context.codingPath), "expected \(typeName(type))")
        case .dataCorrupted(let context):
            if let own = context.underlyingError as? CredentialFileError { return own }
            if context.codingPath.isEmpty {
                let detail = (context.underlyingError as NSError?)?.userInfo[NSDebugDescriptionErrorKey] as? String
                return CredentialFileError(.syntax, path: "$", "not valid JSON" + (detail.map { ": \($0)" } ?? ""))
            }
            return CredentialFileError(.invalidValue, path: jsonPath(context.codingPath), context.debugDescription)
        @unknown default:
            return CredentialFileError(.invalidValue, path: "$", "\(error)")
        }
    }

    private static func typeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Int.Type, is UInt16.Type: "a number"
        case is Bool.Type: "true or false"
        default: "a \(type)"
        }
    }
}

/// Any JSON key, to find fields the format does not define.
private struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) {
        stringValue = String(intValue)
        self.intValue = intValue
    }
}

/// The decoding context: reads fields by name, turns hex and AIDs into values, and reports
/// problems with the JSON path.
private struct Fields {
    let container: KeyedDecodingContainer<AnyKey>

    init(_ decoder: any Decoder, known: Set<String>) throws {
        container = try decoder.container(keyedBy: AnyKey.self)
        for key in container.allKeys where !known.contains(key.stringValue) {
            throw fail(key.stringValue, .unknownField,
                       "\"\(key.stringValue)\" is not a field here; known fields: \(known.sorted().joined(separator: ", "))")
        }
    }

    func fail(_ key: String, _ code: CredentialFileError.Code, _ reason: String) -> DecodingError {
        let path = CredentialFile.jsonPath(container.codingPath + [AnyKey(key)])
        return DecodingError.dataCorrupted(.init(
            codingPath: container.codingPath + [AnyKey(key)], debugDescription: reason,
            underlyingError: CredentialFileError(code, path: path, reason)))
    }

    func has(_ key: String) -> Bool { container.contains(AnyKey(key)) }

    func string(_ key: String) throws -> String { try container.decode(String.self, forKey: AnyKey(key)) }
    func optionalString(_ key: String) throws -> String? { try container.decodeIfPresent(String.self, forKey: AnyKey(key)) }
    func optionalBool(_ key: String) throws -> Bool? { try container.decodeIfPresent(Bool.self, forKey: AnyKey(key)) }
    func optionalInt(_ key: String) throws -> Int? { has(key) ? try int(key) : nil }

    /// A whole number. A fractional one, or one too large for `Int`, is refused at its own path
    /// (JSONDecoder reports it with no path, which read as "not valid JSON").
    func int(_ key: String) throws -> Int {
        if let value = try? container.decode(Int.self, forKey: AnyKey(key)) { return value }
        if let number = try? container.decode(Double.self, forKey: AnyKey(key)) {
            let what = number.rounded() == number ? "is too large for a whole number here" : "is not a whole number"
            throw fail(key, .invalidValue, "\(number) \(what); write an integer such as 60")
        }
        return try container.decode(Int.self, forKey: AnyKey(key))  // not a number: the type error, at its path
    }

    func hex(_ key: String) throws -> [UInt8] {
        let text = try string(key)
        do {
            return try HexBytes.parse(text)
        } catch {
            throw fail(key, .invalidValue, "\"\(text)\" is not hex bytes: \(error.reason)")
        }
    }

    func optionalHex(_ key: String) throws -> [UInt8]? { has(key) ? try hex(key) : nil }

    func aids(_ key: String) throws -> [AIDRegistration] {
        var list = try container.nestedUnkeyedContainer(forKey: AnyKey(key))
        var out: [AIDRegistration] = []
        while !list.isAtEnd {
            let index = list.currentIndex
            let text = try list.decode(String.self)
            do {
                out.append(try AIDRegistration(text: text))
            } catch {
                let path = container.codingPath + [AnyKey(key), AnyKey(intValue: index)!]
                let reason = "\"\(text)\" is not an AID (5 to 16 hex bytes, optionally ending in * for a prefix): \(error.reason)"
                throw DecodingError.dataCorrupted(.init(
                    codingPath: path, debugDescription: reason,
                    underlyingError: CredentialFileError(.invalidValue, path: CredentialFile.jsonPath(path), reason)))
            }
        }
        return out
    }

    func nested(_ key: String) throws -> any Decoder { try container.superDecoder(forKey: AnyKey(key)) }
}

private struct Document: Decodable {
    var id: String
    var name: String?
    var emulation: CardEmulationOptions
    var secureElement: CredentialFile.SecureElementSpec

    init(from decoder: any Decoder) throws {
        let f = try Fields(decoder, known: ["secbridge-credential", "id", "name", "emulation", "applets", "pcscCard"])
        let version = try f.int("secbridge-credential")
        guard version == 1 else {
            throw f.fail("secbridge-credential", .unsupportedVersion, "format version \(version) is not supported; this build reads version 1")
        }
        id = try f.string("id")
        guard !id.isEmpty else { throw f.fail("id", .invalidValue, "the id must not be empty") }
        name = try f.optionalString("name")
        emulation = f.has("emulation") ? try EmulationSpec(from: f.nested("emulation")).options : CardEmulationOptions()
        switch (f.has("applets"), f.has("pcscCard")) {
        case (true, false):
            var list = try f.container.nestedUnkeyedContainer(forKey: AnyKey("applets"))
            var applets: [CredentialFile.AppletSpec] = []
            while !list.isAtEnd { applets.append(try AppletDecoder(from: list.superDecoder()).spec) }
            guard !applets.isEmpty else { throw f.fail("applets", .invalidValue, "give at least one applet") }
            try Self.refuseRepeatedAIDs(applets, f)
            secureElement = .applets(applets)
        case (false, true):
            let card = try Fields(f.nested("pcscCard"), known: ["reader", "resolveStatusWordsLocally"])
            secureElement = .pcscCard(
                reader: try card.string("reader"), resolveStatusWordsLocally: try card.optionalBool("resolveStatusWordsLocally") ?? false)
        default:
            throw f.fail("applets", .missingField, "give either \"applets\" (host applets) or \"pcscCard\" (a card in a PC/SC reader), not both")
        }
    }
}

extension Document {
    /// An AID two applets register exactly: routing picks the first, so the later one would never
    /// be selected (README.md, "Credential files", routing). Prefix registrations may overlap.
    /// A transcript applet's AIDs from its SELECTs are known only once it is made; they are not
    /// checked here.
    fileprivate static func refuseRepeatedAIDs(_ applets: [CredentialFile.AppletSpec], _ f: Fields) throws {
        var owner: [AIDRegistration: Int] = [:]
        for (index, applet) in applets.enumerated() {
            let registered: [(AIDRegistration, key: String, position: Int?)]
            switch applet {
            case .ndefTag:
                registered = [(AIDRegistration(unchecked: Type4CapabilityContainer.applicationAID), "type", nil)]
            case .declarative(_, let aids, _, _, _), .transcript(_, _, let aids, _):
                registered = aids.enumerated().map { ($0.element, "aids", $0.offset) }
            }
            for (aid, key, position) in registered where !aid.isPrefix {
                if let first = owner[aid] {
                    var path = f.container.codingPath + [AnyKey("applets"), AnyKey(intValue: index)!, AnyKey(key)]
                    if let position { path.append(AnyKey(intValue: position)!) }
                    let reason = "the AID \(aid) is registered by applets[\(first)] too, which would answer every SELECT of it; give each applet its own AIDs"
                    throw DecodingError.dataCorrupted(.init(
                        codingPath: path, debugDescription: reason,
                        underlyingError: CredentialFileError(.invalidValue, path: CredentialFile.jsonPath(path), reason)))
                }
                owner[aid] = index
            }
        }
    }
}

private struct EmulationSpec: Decodable {
    var options = CardEmulationOptions()

    init(from decoder: any Decoder) throws {
        let f = try Fields(decoder, known: ["uid", "atqa", "sak", "historicalBytes", "timeLimitSeconds"])
        if let uid = try f.optionalHex("uid") {
            do { options.uid = try EmulatedUID(uid) } catch { throw f.fail("uid", .invalidValue, error.reason) }
        }
        if let atqa = try f.optionalHex("atqa") {
            guard atqa.count == 2 else { throw f.fail("atqa", .invalidValue, "ATQA is 2 bytes, most significant first (e.g. \"00 04\")") }
            options.atqa = ATQA(mostSignificantFirst: (atqa[0], atqa[1]))
        }
        if let sak = try f.optionalHex("sak") {
            guard sak.count == 1 else { throw f.fail("sak", .invalidValue, "SAK is 1 byte (e.g. \"20\")") }
            options.sak = sak[0]
        }
        if let historical = try f.optionalHex("historicalBytes") {
            guard historical.count <= 48 else { throw f.fail("historicalBytes", .invalidValue, "at most 48 historical bytes") }
            options.historicalBytes = historical
        }
        if let seconds = try f.optionalInt("timeLimitSeconds") {
            guard (1...60).contains(seconds) else { throw f.fail("timeLimitSeconds", .invalidValue, "1 to 60 seconds") }
            options.timeLimit = .seconds(seconds)
        }
    }
}

private struct AppletDecoder: Decodable {
    var spec: CredentialFile.AppletSpec

    init(from decoder: any Decoder) throws {
        let kind = try Fields(decoder, known: ["type", "name", "records", "readOnly", "maxFileSize", "fileID", "mle", "mlc", "capabilityContainer",
                                               "aids", "select", "rules", "default", "file"])
        switch try kind.string("type") {
        case "ndef-tag":
            let f = try Fields(decoder, known: ["type", "name", "records", "readOnly", "maxFileSize", "fileID", "mle", "mlc", "capabilityContainer"])
            var records: [NDEFRecord] = []
            if f.has("records") {
                var list = try f.container.nestedUnkeyedContainer(forKey: AnyKey("records"))
                while !list.isAtEnd { records.append(try RecordSpec(from: list.superDecoder()).record) }
            }
            let message: NDEFMessage? = records.isEmpty ? nil : try NDEFMessage(records: records)
            let readOnly = try f.optionalBool("readOnly") ?? true
            var cc: Type4CapabilityContainer?
            if let raw = try f.optionalHex("capabilityContainer") {
                // Served byte for byte, unchecked against Android's rules: a tag readers refuse.
                for key in ["maxFileSize", "fileID", "mle", "mlc", "readOnly"] where f.has(key) {
                    throw f.fail(key, .invalidValue, "\(key) is part of the capabilityContainer given; leave one of them out")
                }
                do throws(TagFormatError) {
                    cc = try Type4CapabilityContainer(parsing: raw, rules: .layoutOnly)
                } catch {
                    throw f.fail("capabilityContainer", .invalidValue, "not a 15-byte mapping 2.0 capability container: \(error.reason)")
                }
                if let mle = cc.map({ Int($0.mle) }), mle > Type4TagApplet.maximumReadLength {
                    throw f.fail("capabilityContainer", .invalidValue, Type4TagApplet.mleTooLarge(mle))
                }
            } else if f.has("maxFileSize") || f.has("fileID") || f.has("mle") || f.has("mlc") {
                let fileID = try f.optionalHex("fileID") ?? [0xE1, 0x04]
                guard fileID.count == 2 else { throw f.fail("fileID", .invalidValue, "a file id is 2 bytes, e.g. \"E1 04\"") }
                // Each is two bytes of the container: a value outside 0 … FFFF is refused as given.
                func word(_ key: String, default value: Int) throws -> UInt16 {
                    let number = try f.optionalInt(key) ?? value
                    guard (0...0xFFFF).contains(number) else {
                        throw f.fail(key, .invalidValue, "\(number) does not fit the capability container's two bytes (0 … 65535)")
                    }
                    return UInt16(number)
                }
                let mle = try word("mle", default: 0x7F)
                if Int(mle) > Type4TagApplet.maximumReadLength {
                    throw f.fail("mle", .invalidValue, Type4TagApplet.mleTooLarge(Int(mle)))
                }
                let mlc = try word("mlc", default: 0x7F)
                let messageSize = message?.serialized().count ?? 0
                guard f.has("maxFileSize") || messageSize + 2 <= 0x7FFF else {
                    throw f.fail("records", .invalidValue, "the NDEF message is \(messageSize) bytes; a Type 4 Tag holds at most 32765")
                }
                let size = try word("maxFileSize", default: max(0x0400, messageSize + 2))
                do throws(TagFormatError) {
                    cc = try Type4CapabilityContainer(
                        mle: mle, mlc: mlc, ndefFileID: UInt16(fileID[0]) << 8 | UInt16(fileID[1]),
                        maximumNDEFFileSize: size, readOnly: readOnly)
                } catch {
                    // The refused byte's offset in file E103 names the field (NFC Forum Type 4 Tag
                    // 2.0 §5.1: MLe at 3, MLc at 5, the NDEF file id at 9, its size at 11).
                    let key = [3: "mle", 5: "mlc", 9: "fileID"][error.offset ?? 11] ?? "maxFileSize"
                    throw f.fail(key, .invalidValue, "the capability container would be refused by Android: \(error.reason)")
                }
            }
            spec = .ndefTag(
                name: try f.optionalString("name") ?? "NFC Forum Type 4 Tag", message: message,
                readOnly: cc.map(\.isReadOnly) ?? readOnly, capabilityContainer: cc)
        case "declarative":
            let f = try Fields(decoder, known: ["type", "name", "aids", "select", "rules", "default"])
            let aids = try f.aids("aids")
            guard !aids.isEmpty else { throw f.fail("aids", .invalidValue, "a declarative applet needs at least one AID") }
            var rules: [DeclarativeApplet.Rule] = []
            if f.has("rules") {
                var list = try f.container.nestedUnkeyedContainer(forKey: AnyKey("rules"))
                while !list.isAtEnd { rules.append(try RuleSpec(from: list.superDecoder()).rule) }
            }
            spec = .declarative(
                name: try f.optionalString("name") ?? "declarative applet", aids: aids,
                select: try f.optionalHex("select") ?? [0x90, 0x00], rules: rules,
                defaultResponse: try f.optionalHex("default") ?? [0x6D, 0x00])
            try Self.checkResponse(f, "select", spec)
            if case .declarative(_, _, let select, _, let defaultResponse) = spec {
                if let problem = DeclaredTLV.problem(select, isSelect: true) { throw f.fail("select", .invalidValue, problem) }
                if let problem = DeclaredTLV.problem(defaultResponse) { throw f.fail("default", .invalidValue, problem) }
            }
        case "transcript":
            let f = try Fields(decoder, known: ["type", "name", "file", "aids", "default"])
            spec = .transcript(
                name: try f.optionalString("name"), file: try f.string("file"),
                aids: f.has("aids") ? try f.aids("aids") : [], defaultResponse: try f.optionalHex("default") ?? [0x6D, 0x00])
        case let other:
            throw kind.fail("type", .invalidValue, "\"\(other)\" is not an applet type; use \"ndef-tag\", \"declarative\" or \"transcript\"")
        }
    }

    private static func checkResponse(_ f: Fields, _ key: String, _ spec: CredentialFile.AppletSpec) throws {
        if case .declarative(_, _, let select, _, let defaultResponse) = spec {
            if select.count < 2 { throw f.fail("select", .invalidValue, "a response ends with SW1 SW2 (at least 2 bytes)") }
            if defaultResponse.count < 2 { throw f.fail("default", .invalidValue, "a response ends with SW1 SW2 (at least 2 bytes)") }
        }
    }
}

/// The BER-TLV a declarative applet's response declares must parse as a reader parses it
/// (ISO/IEC 7816-4 §5.2.2 for BER-TLV, §11.1 for the FCI): a reader that finds a template whose
/// length disagrees with its content rejects the whole answer.
enum DeclaredTLV {
    /// Data that is not BER-TLV by nature: GET CHALLENGE's random bytes (84), INTERNAL
    /// AUTHENTICATE's cryptogram (88), file contents (B0, B2 is records: kept), GET RESPONSE (C0).
    static let opaqueInstructions: Set<UInt8> = [0x84, 0x88, 0xB0, 0xC0]

    /// Why `response`'s data (before SW1 SW2) is not the BER-TLV it declares, naming the byte;
    /// nil when it parses or declares none. A SELECT's answer data is an FCI/FCP/FMD template
    /// (ISO/IEC 7816-4 §11.1) and must parse; any other answer is checked when its first byte is
    /// a constructed tag (bit 6 set, e.g. 6F, 70, 77, A5), as a reader would parse it.
    static func problem(_ response: [UInt8], ins: UInt8? = nil, isSelect: Bool = false) -> String? {
        guard response.count > 2 else { return nil }
        let data = Array(response.dropLast(2))
        if let ins, opaqueInstructions.contains(ins) { return nil }
        guard isSelect || (data[0] & 0x20 != 0 && data[0] != 0xFF) else { return nil }
        do throws(ISO7816Error) {
            _ = try BERTLV.parseAll(data)
            return nil
        } catch {
            let at = error.offset.map { $0 < data.count ? "byte \($0) (\([data[$0]].hexString))" : "byte \($0) (past the data's end)" } ?? "the data"
            return "the response data is not well-formed BER-TLV (ISO/IEC 7816-4 §5.2.2), so a reader rejects it: \(error.reason), at \(at) of \(data.hexString); fix the template's length or its content"
        }
    }
}

private struct RuleSpec: Decodable {
    var rule: DeclarativeApplet.Rule

    init(from decoder: any Decoder) throws {
        let f = try Fields(decoder, known: ["command", "response", "pinned"])
        let text = try f.string("command")
        let pattern: APDUPattern
        do { pattern = try APDUPattern(text: text) } catch { throw f.fail("command", .invalidValue, error.reason) }
        let response = try f.hex("response")
        guard response.count >= 2 else { throw f.fail("response", .invalidValue, "a response ends with SW1 SW2 (at least 2 bytes)") }
        let ins = pattern.items.count > 1 ? pattern.items[1] : nil
        if let problem = DeclaredTLV.problem(response, ins: ins) { throw f.fail("response", .invalidValue, problem) }
        rule = DeclarativeApplet.Rule(command: pattern, response: response, pinned: try f.optionalBool("pinned") ?? false)
        if f.has("pinned"), !rule.isGetChallenge {
            throw f.fail("pinned", .invalidValue, "\"pinned\" is for a GET CHALLENGE rule (INS 84), whose bytes are random unless pinned; this rule's command is \(pattern) and always gets the declared bytes: remove \"pinned\"")
        }
    }
}

private struct RecordSpec: Decodable {
    var record: NDEFRecord

    init(from decoder: any Decoder) throws {
        // One kind per record, with that kind's fields only (README.md, "Credential files").
        let kindsInOrder = ["uri", "text", "mime", "tnf"]
        let fieldsOfKind: [String: Set<String>] = [
            "uri": ["uri"], "text": ["text", "language"], "mime": ["mime", "payload"], "tnf": ["tnf", "type", "id", "payload"],
        ]
        let any = try Fields(decoder, known: fieldsOfKind.values.reduce(into: Set<String>()) { $0.formUnion($1) })
        let kinds = kindsInOrder.filter(any.has)
        if kinds.count > 1 {
            throw any.fail(kinds[1], .invalidValue, "a record is one of uri, text, mime or tnf; this one gives both \"\(kinds[0])\" and \"\(kinds[1])\"")
        }
        let f = try kinds.first.flatMap { fieldsOfKind[$0] }.map { try Fields(decoder, known: $0) } ?? any
        if f.has("uri") {
            record = NDEFRecord.uri(try f.string("uri"))
        } else if f.has("text") {
            let text = try f.string("text")
            let language = try f.optionalString("language") ?? "en"
            do throws(TagFormatError) {
                record = try NDEFRecord.text(text, language: language)
            } catch {
                throw f.fail("language", .invalidValue, error.reason)
            }
        } else if f.has("mime") {
            record = NDEFRecord(tnf: .mimeMedia, type: Array(try f.string("mime").utf8), payload: try f.optionalHex("payload") ?? [])
        } else if f.has("tnf") {
            let tnf = try f.int("tnf")
            guard (0...5).contains(tnf) else { throw f.fail("tnf", .invalidValue, "TNF must be 0 … 5 (6 and 7 are for chunks and reserved)") }
            record = NDEFRecord(
                tnf: NDEFRecord.TNF(rawValue: UInt8(tnf)), type: try f.optionalHex("type") ?? [], id: try f.optionalHex("id") ?? [],
                payload: try f.optionalHex("payload") ?? [])
        } else {
            throw f.fail("uri", .missingField, "a record needs \"uri\", \"text\", \"mime\" or \"tnf\"")
        }
    }
}
