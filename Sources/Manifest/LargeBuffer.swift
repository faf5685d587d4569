#if canImport(Glibc)
    internal import Glibc

    /// Large output buffers are written once, front to back: asking the kernel for huge pages
    /// (where it is set to `madvise`) turns thousands of page faults into a handful.
    enum LargeBuffer {
        static func preferHugePages(_ buffer: inout [UInt8]) {
            let huge = 2 << 20
            guard buffer.capacity >= 2 * huge else { return }
            let capacity = buffer.capacity
            buffer.withUnsafeMutableBufferPointer { b in
                guard let base = b.baseAddress else { return }
                let start = (Int(bitPattern: base) + huge - 1) & ~(huge - 1)
                let end = (Int(bitPattern: base) + capacity) & ~(huge - 1)
                if end > start {
                    _ = madvise(UnsafeMutableRawPointer(bitPattern: start), end - start, MADV_HUGEPAGE)
                }
            }
        }
    }
#else
    enum LargeBuffer {
        static func preferHugePages(_ buffer: inout [UInt8]) {}
    }
#endif
