/// One URL-bearing attribute of a segment element: `SegmentTemplate@media` / `@initialization`
/// / `@index` / `@bitstreamSwitching`, `Initialization@sourceURL`,
/// `RepresentationIndex@sourceURL`, `BitstreamSwitching@sourceURL`, `SegmentURL@media` /
/// `@index`. Ranges (`@range`, `@mediaRange`, `@indexRange`) are not URLs and stay.
struct SegmentItem {
    /// What a lower level must declare to override this item: a SegmentTemplate attribute,
    /// or a child element kind (a lower SegmentList with its own SegmentURLs replaces them all).
    enum Key: Hashable {
        case attribute(Int)
        case child(Int)
    }

    let owner: MPDNode
    let attribute: StaticString
    /// The attribute's index in `MPDDocument.attributes`; nil for an attribute added by a merge.
    let source: Int?
    let key: Key
    let role: DASHReference.Role

    /// The item for attribute `name` of `owner`, if it has one.
    init?(_ owner: MPDNode, _ name: StaticString, key: Key, role: DASHReference.Role) {
        let found = owner.lookup(name)
        guard found.source != nil || found.added != nil else { return nil }
        self.owner = owner
        attribute = name
        source = found.source
        self.key = key
        self.role = role
    }

    /// The attribute's current value, decoded.
    var value: [UInt8] {
        if let source { return owner.attributeValue(at: source) }
        return owner.attribute(attribute) ?? []
    }

    /// Sets the attribute (decoded value).
    func set(_ value: [UInt8]) {
        if let source { owner.setAttributeValue(at: source, value) } else { owner.setAttribute(attribute, value) }
    }

    static let templateAttributes: [(StaticString, DASHReference.Role)] = [
        ("media", .media), ("initialization", .initialization), ("index", .index),
        ("bitstreamSwitching", .bitstreamSwitching),
    ]

    /// The child kinds with URLs, by `Key.child` index. Index 0 has the 2011 spelling too.
    static func childKind(_ node: MPDNode) -> Int? {
        if node.hasLocalName("Initialization") || node.hasLocalName("Initialisation") { return 0 }
        if node.hasLocalName("RepresentationIndex") { return 1 }
        if node.hasLocalName("BitstreamSwitching") { return 2 }
        if node.hasLocalName("SegmentURL") { return 3 }
        return nil
    }

    /// Every URL item of a segment element, in document order.
    static func items(of element: MPDNode, kind: SegmentKind) -> [SegmentItem] {
        var items: [SegmentItem] = []
        if kind == .template {
            for (i, (name, role)) in templateAttributes.enumerated() {
                if let item = SegmentItem(element, name, key: .attribute(i), role: role) { items.append(item) }
            }
        }
        try? element.forEachElementChild { child in
            guard let k = childKind(child) else { return }
            switch k {
            case 0, 1, 2:
                let role: DASHReference.Role = k == 0 ? .initialization : k == 1 ? .index : .bitstreamSwitching
                if let item = SegmentItem(child, "sourceURL", key: .child(k), role: role) { items.append(item) }
            default:
                guard kind == .list else { return }
                if let item = SegmentItem(child, "media", key: .child(k), role: .media) { items.append(item) }
                if let item = SegmentItem(child, "index", key: .child(k), role: .index) { items.append(item) }
            }
        }
        return items
    }

    /// Whether `lower` (a segment element below this item's) declares what overrides it.
    static func overrides(_ lower: MPDNode, _ key: Key) -> Bool {
        switch key {
        case .attribute(let i):
            return lower.hasAttribute(templateAttributes[i].0)
        case .child(let k):
            var found = false
            try? lower.forEachElementChild { child in
                if !found, childKind(child) == k { found = true }
            }
            return found
        }
    }
}

extension DASHRewriteRun {
    /// Rewrites every segment URL: first decides, for each Period- and AdaptationSet-level
    /// segment element, whether it can stay shared, then writes all values.
    mutating func rewriteSegments() throws(ManifestError) {
        for site in periodSites { try settle(site) }
        for site in adaptationSetSites { try settle(site) }
        for p in pending { try write(p) }
        for rep in representations {
            for kind in SegmentKind.allCases {
                guard let element = rep.own[kind.rawValue] else { continue }
                for item in SegmentItem.items(of: element, kind: kind) {
                    let value = item.value
                    guard let form = try located(item.owner.line, { () throws(ManifestError) in
                        try r.writer.form(value[...], in: rep.base, allowRelative: true)
                    }) else { continue }
                    try note(item.role, value, in: rep.base, line: item.owner.line, representation: rep.id)
                    item.set(form.bytes)
                }
            }
        }
    }

    /// THE HARD CASE: a segment element declared on a Period or AdaptationSet while the
    /// Representations that inherit it have different BaseURLs. Players resolve an inherited
    /// template against each Representation's own (innermost) BaseURL, so one value must work
    /// against all of them.
    ///
    /// For each URL item the value each inheriting Representation needs is worked out
    /// (`DASHReferenceWriter`). Usually they are equal: a relative template stays relative with
    /// the xresid in its own query and resolves correctly against each Representation's proxy
    /// BaseURL, and an absolute one is the same proxy URL for all. Then the element is
    /// rewritten in place and stays shared. When they differ (the Representations' bases have
    /// different schemes, a path-absolute or climbing template meets different hosts or
    /// depths, or some Representations have no BaseURL in scope and get absolute URLs), the
    /// element is made explicit on every Representation below it: each gets its own copy with
    /// the attributes and children merged from every level (as inheritance would have given
    /// them), rewritten against its own base. The shared element is then rewritten against its
    /// own level's base, for anything that still reads it.
    ///
    /// Comparing costs items x distinct bases; past `comparisonBudget` (a hostile MPD with
    /// thousands of Representations under one long SegmentList) the element is made explicit
    /// without comparing, which is always correct, and `MPDDocument.maxCopiedBytes` bounds
    /// what the copies may add.
    mutating func settle(_ site: SegmentSite) throws(ManifestError) {
        let items = SegmentItem.items(of: site.node, kind: site.kind)
        var basesByKey: [SegmentItem.Key: (all: [DASHBase], relative: [DASHBase])] = [:]
        var decided: [PendingWrite] = []
        var split = false
        for item in items {
            if basesByKey[item.key] == nil {
                let all = inheritingBases(site, item.key)
                var seen: Set<DASHBase.RelativeKey> = []
                basesByKey[item.key] = (all, all.filter { seen.insert($0.relativeKey).inserted })
            }
            let (all, relative) = basesByKey[item.key]!
            guard let shared = all.first else {
                decided.append(try decide(item, in: site.base, representation: nil))
                continue
            }
            let first = try decide(item, in: shared, representation: nil)
            // A relative form depends on the base only through its relative key.
            let others = first.form?.relativeDepthChange != nil ? relative.dropFirst() : all.dropFirst()
            comparisonBudget -= others.count
            if comparisonBudget < 0 {
                split = true
                break
            }
            for other in others where try decide(item, in: other, representation: nil).form != first.form {
                split = true
                break
            }
            if split { break }
            decided.append(first)
        }
        if split {
            // Refuse before copying anything when the copies would be too large.
            let elementSize = site.node.element.end - site.node.element.start
            if site.node.doc.copiedBytes + elementSize * site.scope.count > MPDDocument.maxCopiedBytes {
                throw Self.tooLargeToCopy
            }
            for i in site.scope { try makeExplicit(site.kind, on: i) }
            decided = []
            for item in items { decided.append(try decide(item, in: site.base, representation: nil)) }
        }
        pending.append(contentsOf: decided)
    }

    /// The distinct bases of the Representations that take `key` from the site's element.
    func inheritingBases(_ site: SegmentSite, _ key: SegmentItem.Key) -> [DASHBase] {
        var bases: [DASHBase] = []
        var seen: Set<DASHBase.Key> = []
        for i in site.scope {
            let rep = representations[i]
            var lower: [MPDNode?] = [rep.own[site.kind.rawValue]]
            if site.isPeriodLevel { lower.append(rep.inherited[site.kind.rawValue][1]) }
            if lower.contains(where: { $0.map { SegmentItem.overrides($0, key) } ?? false }) { continue }
            if seen.insert(rep.base.key).inserted { bases.append(rep.base) }
        }
        return bases
    }

    /// Gives Representation `i` its own complete segment element of `kind`: its existing one
    /// (or a copy of the innermost inherited one), plus every attribute and child kind it
    /// would inherit, taken from the innermost level that declares it. Linear in the children.
    mutating func makeExplicit(_ kind: SegmentKind, on i: Int) throws(ManifestError) {
        let rep = representations[i]
        let chain = rep.inherited[kind.rawValue].compactMap { $0 }
        guard let innermost = chain.last else { return }
        let cost = chain.reduce(0) { $0 + $1.element.end - $1.element.start }
        if innermost.doc.copiedBytes + cost > MPDDocument.maxCopiedBytes { throw Self.tooLargeToCopy }
        let target = rep.own[kind.rawValue] ?? innermost.copy(into: rep.node, before: nil, deep: false)
        for upper in chain.reversed() {
            target.copyMissingAttributes(from: upper)
            var present: Set<ArraySlice<UInt8>> = []
            try? target.forEachElementChild { present.insert($0.localName) }
            var missing: [MPDNode] = []
            try? upper.forEachElementChild { child in
                if !present.contains(child.localName) { missing.append(child) }
            }
            Self.insertInSchemaOrder(missing, into: target)
        }
        representations[i].own[kind.rawValue] = target
    }

    static let tooLargeToCopy = ManifestError(
        .xmlLimit,
        "making inherited segment elements explicit per Representation would add more than \(MPDDocument.maxCopiedBytes) bytes")

    /// Inserts copies of `children` into `parent` in the schema's order (Initialization,
    /// RepresentationIndex, FailoverContent, SegmentTimeline, BitstreamSwitching, SegmentURL),
    /// so copies land where a validator expects them: one merge of two ordered lists.
    static func insertInSchemaOrder(_ children: [MPDNode], into parent: MPDNode) {
        func rank(_ n: MPDNode) -> Int {
            switch SegmentItem.childKind(n) {
            case 0: return 0
            case 1: return 1
            case 2: return 4
            case 3: return 5
            default: return n.hasLocalName("FailoverContent") ? 2 : n.hasLocalName("SegmentTimeline") ? 3 : 6
            }
        }
        let incoming = children.enumerated().sorted { (rank($0.element), $0.offset) < (rank($1.element), $1.offset) }.map(\.element)
        var existing: [MPDNode] = []
        try? parent.forEachElementChild { existing.append($0) }
        var cursor = 0
        var previous: MPDNode?
        for child in incoming {
            let r = rank(child)
            while cursor < existing.count, rank(existing[cursor]) <= r {
                previous = existing[cursor]
                cursor += 1
            }
            previous = child.copy(into: parent, after: previous, deep: true)
        }
    }

    /// The value `item` gets in `base`.
    func decide(_ item: SegmentItem, in base: DASHBase, representation: String?) throws(ManifestError) -> PendingWrite {
        let value = item.value
        let form = try located(item.owner.line) { () throws(ManifestError) in
            try r.writer.form(value[...], in: base, allowRelative: true)
        }
        return PendingWrite(item: item, form: form, base: base, representation: representation)
    }

    mutating func write(_ p: PendingWrite) throws(ManifestError) {
        guard let form = p.form else { return }
        if r.options.collectReferences {
            try note(p.item.role, p.item.value, in: p.base, line: p.item.owner.line, representation: p.representation)
        }
        p.item.set(form.bytes)
    }
}
