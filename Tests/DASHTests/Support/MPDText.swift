/// A minimal static MPD around `body` (children of MPD), with the namespaces fixtures use.
func mpd(_ body: String, attributes: String = "") -> String {
    """
    <?xml version="1.0" encoding="UTF-8"?>
    <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" xmlns:xlink="http://www.w3.org/1999/xlink" \
    xmlns:cenc="urn:mpeg:cenc:2013" type="static" mediaPresentationDuration="PT10S" \
    minBufferTime="PT2S" profiles="urn:mpeg:dash:profile:isoff-live:2011"\(attributes)>
    \(body)
    </MPD>
    """
}
