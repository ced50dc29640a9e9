/// The latest ``capacity`` elements of a sequence appended one at a time (a ring buffer), with the
/// count of those it no longer holds: what a simulated peer keeps of what it received, so that a
/// long run (a soak test of a million APDUs) costs the same memory as a short one.
public struct BoundedLog<Element: Sendable>: Sendable {
    /// The most elements kept; older ones are dropped (and counted) as new ones come.
    public let capacity: Int
    private var storage: [Element] = []
    /// Where the oldest kept element is, once the buffer is full.
    private var oldest = 0
    /// Every element ever appended, kept or dropped.
    public private(set) var total = 0

    /// - Parameter capacity: at least 1.
    public init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// How many elements were dropped to keep the latest ``capacity``.
    public var dropped: Int { total - storage.count }

    /// How many elements are kept.
    public var count: Int { storage.count }

    /// Appends `element`; when ``capacity`` elements are held already, the oldest is dropped (and
    /// counted in ``dropped``).
    public mutating func append(_ element: Element) {
        total += 1
        if storage.count < capacity {
            storage.append(element)
        } else {
            storage[oldest] = element
            oldest = (oldest + 1) % capacity
        }
    }

    /// Changes the newest element in place (nothing when none was appended).
    public mutating func updateLast(_ change: (inout Element) -> Void) {
        guard !storage.isEmpty else { return }
        change(&storage[(oldest + storage.count - 1) % storage.count])
    }

    /// The kept elements, oldest first.
    public var elements: [Element] {
        Array(storage[oldest...] + storage[..<oldest])
    }

    /// The newest element, or nil when none was appended.
    public var last: Element? {
        guard !storage.isEmpty else { return nil }
        return storage[(oldest + storage.count - 1) % storage.count]
    }
}
