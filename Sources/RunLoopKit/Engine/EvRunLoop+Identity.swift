extension EvRunLoop: Hashable {
    /// Whether two references name the same loop: loops are compared by identity (`===`), as
    /// each thread has one (R1) and no two loops are ever alike.
    public static func == (lhs: EvRunLoop, rhs: EvRunLoop) -> Bool { lhs === rhs }

    /// Hashes the loop's identity, so loops can key a dictionary or fill a set.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
