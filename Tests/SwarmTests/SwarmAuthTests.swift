import Foundation
import PieceStore
import Swarm
import Testing

/// The swarm's signatures: HMAC-SHA256 itself, node logins with their replay window, and the
/// tracker's piece tokens.
@Suite("Swarm authentication")
struct SwarmAuthTests {
    @Test func hmacMatchesRFC4231() {
        // RFC 4231 test case 2.
        #expect(HMACSHA256.hex(key: "Jefe", message: "what do ya want for nothing?")
            == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func aSignedLoginIsAcceptedOnce() throws {
        let verifier = LoginVerifier(appID: "app", secret: "s3cret")
        let proof = LoginProof.sign(appID: "app", peerID: "node-1", secret: "s3cret")
        try verifier.verify(proof)
        #expect(throws: LoginRefusal.replayed) { try verifier.verify(proof) }
    }

    @Test func wrongSecretsForgeriesAndStaleLoginsAreRefused() {
        let verifier = LoginVerifier(appID: "app", secret: "s3cret", window: 60)
        #expect(throws: LoginRefusal.badSignature) { try verifier.verify(LoginProof.sign(appID: "app", peerID: "n", secret: "guess")) }
        #expect(throws: LoginRefusal.unknownApp) { try verifier.verify(LoginProof.sign(appID: "other", peerID: "n", secret: "s3cret")) }
        let good = LoginProof.sign(appID: "app", peerID: "n", secret: "s3cret")
        let forged = LoginProof(appID: "app", peerID: "someone-else", timestamp: good.timestamp, nonce: good.nonce, signature: good.signature)
        #expect(throws: LoginRefusal.badSignature) { try verifier.verify(forged) }
        let old = LoginProof.sign(appID: "app", peerID: "n", secret: "s3cret", now: Date().addingTimeInterval(-120))
        #expect(throws: LoginRefusal.stale) { try verifier.verify(old) }
        let future = LoginProof.sign(appID: "app", peerID: "n", secret: "s3cret", now: Date().addingTimeInterval(120))
        #expect(throws: LoginRefusal.stale) { try verifier.verify(future) }
    }

    @Test func pieceTokensBindRequesterHolderObjectAndExpiry() {
        let now = Date()
        let grant = PieceToken(requester: "a", holder: "b", objectID: "obj", expiry: Int64(now.timeIntervalSince1970) + 30)
        let token = grant.encoded(secret: "s3cret")
        #expect(grant.isValid(token, secret: "s3cret", now: now))
        #expect(!grant.isValid(token, secret: "other", now: now))
        #expect(!grant.isValid(token, secret: "s3cret", now: now.addingTimeInterval(60)), "expired")
        for other in [
            PieceToken(requester: "x", holder: "b", objectID: "obj", expiry: grant.expiry),
            PieceToken(requester: "a", holder: "x", objectID: "obj", expiry: grant.expiry),
            PieceToken(requester: "a", holder: "b", objectID: "x", expiry: grant.expiry),
        ] {
            #expect(!other.isValid(token, secret: "s3cret", now: now), "a token is for one requester, holder and object")
        }
        let stretched = "\(grant.expiry + 1000)." + token.split(separator: ".")[1]
        #expect(!PieceToken(requester: "a", holder: "b", objectID: "obj", expiry: grant.expiry + 1000).isValid(stretched, secret: "s3cret", now: now))
        // The expiry as the tracker writes it, only: the same number written otherwise was the
        // same permission under another text.
        let mac = token.split(separator: ".")[1]
        for respelled in ["+\(grant.expiry).\(mac)", "0\(grant.expiry).\(mac)", " \(grant.expiry).\(mac)"] {
            #expect(!grant.isValid(respelled, secret: "s3cret", now: now), "\(respelled)")
        }
        // A permission for longer than the tracker could have meant (anyone holding the secret
        // can mint one) is refused: at most `maxLifetime` ahead.
        let longLived = PieceToken(requester: "a", holder: "b", objectID: "obj", expiry: Int64(now.timeIntervalSince1970) + 1_000_000_000)
        #expect(!longLived.isValid(longLived.encoded(secret: "s3cret"), secret: "s3cret", now: now))
        let atTheBound = PieceToken(requester: "a", holder: "b", objectID: "obj", expiry: Int64(now.timeIntervalSince1970) + 299)
        #expect(atTheBound.isValid(atTheBound.encoded(secret: "s3cret"), secret: "s3cret", now: now))
    }
}
