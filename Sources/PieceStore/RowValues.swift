import GRDB

extension Row {
    /// The value of `column` as `T`, or nil when it is NULL or of another type: a row no
    /// store wrote (a damaged or hand-edited file) is let go, where GRDB's subscript traps.
    public func converted<T: DatabaseValueConvertible>(_ column: String) -> T? { T.fromDatabaseValue(self[column] as DatabaseValue) }
}
