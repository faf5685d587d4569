/// The state of one MPD rewrite: a walk down MPD → Period → AdaptationSet → Representation
/// that works out the BaseURL in scope at each level and rewrites BaseURL, Location,
/// PatchLocation and `xlink:href` on the way, while noting the segment elements
/// (SegmentBase, SegmentList, SegmentTemplate) and who inherits them. Segment URLs are
/// rewritten afterwards (`SegmentInheritance.swift`), once it is known which inherited
/// elements must be made explicit per Representation.
struct DASHRewriteRun {
    let r: DASHRewriter
    let root: MPDNode
    /// The MPD's namespace: elements in other namespaces (DRM, extensions) are not walked as
    /// DASH elements, only searched for `xlink:href`.
    let dash: Int32
    let documentBase: DASHBase

    var representations: [RepresentationScope] = []
    /// The Periods, in order (`RepresentationScope.period` indexes them).
    var periods: [MPDNode] = []
    /// Each Representation's segments, when `collectSegments` is set (`DASHSegments.swift`).
    var segments: [DASHSegmentList] = []
    var isDynamic: Bool { root.attribute("type").map { $0.elementsEqual("dynamic".utf8) } ?? false }
    var periodSites: [SegmentSite] = []
    var adaptationSetSites: [SegmentSite] = []
    /// Segment URL values decided for inherited elements, written once every element that
    /// needed copying has been copied (copies must see the original values).
    var pending: [PendingWrite] = []
    var references: [DASHReference] = []
    /// How many more forms `settle` may compute to compare Representations' values.
    var comparisonBudget = 250_000

    init(rewriter: DASHRewriter, root: MPDNode) {
        r = rewriter
        self.root = root
        dash = root.namespace
        documentBase = DASHBase(document: rewriter.mpdURL)
    }

    mutating func run() throws(ManifestError) {
        let base = try level(root, parent: documentBase)
        try root.forEachElementChild { child throws(ManifestError) in
            guard child.namespace == dash else { return try xlinks(in: child, base) }
            if child.hasLocalName("Period") {
                try period(child, parent: base)
            } else if child.hasLocalName("Location") {
                try rewriteText(child, in: documentBase, role: .location)
            } else if child.hasLocalName("PatchLocation") {
                try rewriteText(child, in: documentBase, role: .patchLocation)
            } else if !child.hasLocalName("BaseURL") {
                try xlinks(in: child, base)
            }
        }
        // Before the segment URLs are rewritten: the lists are of the origin's values.
        if r.options.collectSegments { segments = segmentLists() }
        try rewriteSegments()
    }

    // MARK: Levels

    mutating func period(_ node: MPDNode, parent: DASHBase) throws(ManifestError) {
        periods.append(node)
        try container(node, parent: parent, childName: "AdaptationSet", isPeriodLevel: true) { run, child, base, own throws(ManifestError) in
            try run.adaptationSet(child, parent: base, period: own)
        }
    }

    mutating func adaptationSet(_ node: MPDNode, parent: DASHBase, period: [MPDNode?]) throws(ManifestError) {
        try container(node, parent: parent, childName: "Representation", isPeriodLevel: false) { run, child, base, own throws(ManifestError) in
            try run.representation(child, parent: base, inherited: SegmentKind.allCases.map { [period[$0.rawValue], own[$0.rawValue]] })
        }
    }

    /// A Period or an AdaptationSet: its own `xlink:href` and BaseURLs, then `visit` for each
    /// child named `childName` (with the base below this level and this level's segment
    /// elements), `xlink:href` below the other children, and finally this level's segment
    /// elements noted as sites over the Representations found below.
    mutating func container(
        _ node: MPDNode, parent: DASHBase, childName: StaticString, isPeriodLevel: Bool,
        _ visit: (inout DASHRewriteRun, MPDNode, DASHBase, [MPDNode?]) throws(ManifestError) -> Void
    ) throws(ManifestError) {
        try xlink(of: node, parent)
        let base = try level(node, parent: parent)
        let first = representations.count
        let own = segmentElements(of: node)
        try node.forEachElementChild { child throws(ManifestError) in
            if child.namespace == dash, child.hasLocalName(childName) {
                try visit(&self, child, base, own)
            } else if !(child.namespace == dash && child.hasLocalName("BaseURL")) {
                try xlinks(in: child, base)
            }
        }
        for kind in SegmentKind.allCases {
            guard let element = own[kind.rawValue] else { continue }
            let site = SegmentSite(node: element, kind: kind, base: base, isPeriodLevel: isPeriodLevel, scope: first..<representations.count)
            if isPeriodLevel { periodSites.append(site) } else { adaptationSetSites.append(site) }
        }
    }

    mutating func representation(_ node: MPDNode, parent: DASHBase, inherited: [[MPDNode?]]) throws(ManifestError) {
        try xlink(of: node, parent)
        let base = try level(node, parent: parent)
        try node.forEachElementChild { child throws(ManifestError) in
            if !(child.namespace == dash && child.hasLocalName("BaseURL")) { try xlinks(in: child, base) }
        }
        representations.append(
            RepresentationScope(
                node: node, base: base, id: node.attribute("id").map { String(decoding: $0, as: UTF8.self) },
                period: periods.count - 1, inherited: inherited, own: segmentElements(of: node)))
    }

    /// The first SegmentBase, SegmentList and SegmentTemplate child of a level, by kind.
    func segmentElements(of node: MPDNode) -> [MPDNode?] {
        var found: [MPDNode?] = [nil, nil, nil]
        try? node.forEachElementChild { child in
            guard child.namespace == dash, let kind = SegmentKind(child), found[kind.rawValue] == nil else { return }
            found[kind.rawValue] = child
        }
        return found
    }

    // MARK: BaseURL, Location, xlink

    /// Rewrites the level's BaseURL children and returns the base below the level.
    mutating func level(_ node: MPDNode, parent: DASHBase) throws(ManifestError) -> DASHBase {
        var alternatives: [DASHBase] = []
        try node.forEachElementChild { child throws(ManifestError) in
            guard child.namespace == dash, child.hasLocalName("BaseURL") else { return }
            let text = child.text
            guard let form = try located(child.line, { () throws(ManifestError) in
                try r.writer.form(text[...], in: parent, allowRelative: true)
            }) else { return }
            let below = try located(child.line) { () throws(ManifestError) in
                try DASHBase(baseURL: form, reference: text[...], parent: parent)
            }
            alternatives.append(below)
            try note(.baseURL, text, in: parent, line: child.line, representation: nil)
            child.setText(form.bytes)
        }
        return DASHBase(alternatives: alternatives) ?? parent
    }

    /// Location and PatchLocation: always absolute, against the MPD URL.
    mutating func rewriteText(_ node: MPDNode, in base: DASHBase, role: DASHReference.Role) throws(ManifestError) {
        let text = node.text
        guard let form = try located(node.line, { () throws(ManifestError) in
            try r.writer.form(text[...], in: base, allowRelative: false)
        }) else { return }
        try note(role, text, in: base, line: node.line, representation: nil)
        node.setText(form.bytes)
    }

    /// The element's own `xlink:href`, absolute (a remote element is fetched on its own).
    /// `urn:mpeg:dash:resolve-to-zero:2013` is not http and stays.
    mutating func xlink(of node: MPDNode, _ base: DASHBase) throws(ManifestError) {
        guard let href = node.xlinkHref else { return }
        let value = node.attributeValue(at: href)
        guard let form = try located(node.line, { () throws(ManifestError) in
            try r.writer.form(value[...], in: base, allowRelative: false)
        }) else { return }
        try note(.xlink, value, in: base, line: node.line, representation: nil)
        node.setAttributeValue(at: href, form.bytes)
    }

    /// `xlink:href` on `node` and every element below it.
    mutating func xlinks(in node: MPDNode, _ base: DASHBase) throws(ManifestError) {
        try xlink(of: node, base)
        try node.forEachElementChild { child throws(ManifestError) in try xlinks(in: child, base) }
    }

    // MARK: Helpers

    /// Runs `body`, giving an error without a line the element's line.
    func located<T>(_ line: @autoclosure () -> Int, _ body: () throws(ManifestError) -> T) throws(ManifestError) -> T {
        do {
            return try body()
        } catch {
            throw error.line == nil ? ManifestError(error.code, line: line(), error.message) : error
        }
    }

    /// Records a rewritten URL when references are collected.
    mutating func note(
        _ role: DASHReference.Role, _ raw: @autoclosure () -> [UInt8], in base: DASHBase, line: @autoclosure () -> Int,
        representation: String?
    ) throws(ManifestError) {
        guard r.options.collectReferences, let origin = try r.writer.origin(raw()[...], in: base) else { return }
        references.append(DASHReference(role: role, origin: origin, representationID: representation, line: line()))
    }
}

/// The three ways an MPD describes segments; each is inherited from Period to AdaptationSet
/// to Representation attribute by attribute and child by child.
enum SegmentKind: Int, CaseIterable {
    case base, list, template

    init?(_ node: MPDNode) {
        if node.hasLocalName("SegmentTemplate") {
            self = .template
        } else if node.hasLocalName("SegmentList") {
            self = .list
        } else if node.hasLocalName("SegmentBase") {
            self = .base
        } else {
            return nil
        }
    }
}

/// A Representation: the base its segment URLs resolve against and its segment elements,
/// inherited (`inherited[kind] = [Period's, AdaptationSet's]`) and its own.
struct RepresentationScope {
    let node: MPDNode
    let base: DASHBase
    let id: String?
    /// Index into `DASHRewriteRun.periods`.
    let period: Int
    let inherited: [[MPDNode?]]
    var own: [MPDNode?]
}

/// A segment element on a Period or AdaptationSet, with the Representations below it.
struct SegmentSite {
    let node: MPDNode
    let kind: SegmentKind
    /// The base at the element's own level.
    let base: DASHBase
    let isPeriodLevel: Bool
    let scope: Range<Int>
}

/// A URL value decided before it can be written.
struct PendingWrite {
    let item: SegmentItem
    let form: DASHReferenceForm?
    let base: DASHBase
    let representation: String?
}
