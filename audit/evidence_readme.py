"""The README.txt of an evidence package: what is inside, and how an auditor verifies it offline."""

README = """Pagetrail evidence package
==========================

Scope: {scope}
Exported {at} by {by}.

What is inside
- manifests/<sequence>-<sha256>.json: each manifest exactly as hashed and signed (canonical JSON).
- index.json: the exporter's signed statement (signature in index.sig.json, Ed25519): the scope; each
  manifest's sequence, sha256, previous_sha256, key id, signature; the chain segment (every link from the
  first manifest in scope to the last, out-of-scope ones between included, continued to the next
  checkpoint; for a date range, to a checkpoint made after the range's end or to the chain head); the
  chain head at export; the signed checkpoints; the latest verification runs and their findings for this
  scope; the retention events, each with its signed statement naming every file it deleted; every asset
  the manifests list, with its file or the reason it is absent; the sha256 of keys.json.
- assets/<name>: the extracted images, if the package was exported with assets. Files deleted under a
  retention policy are left out; a signed retention event in index.json names each of them.
- keys.json: the portal's Ed25519 public keys (current and retired, with their validity periods).
- verify_evidence.py: the offline verifier (Python 3.9+, no network). It needs only the `cryptography`
  package, for Ed25519 (pip install cryptography): a widely reviewed implementation, not one of our own.

How to verify
    python3 verify_evidence.py THIS_PACKAGE.zip --public-keys signing-keys.json
        signing-keys.json: the list the portal publishes at /signing-keys.json, obtained separately (not
        from whoever handed you this package). Every key in keys.json must be in it.
    python3 verify_evidence.py THIS_PACKAGE.zip --trust-package-keys
        without a list of your own: trust then rests on the keys the package carries, and a package
        re-signed with another key that carries that key would pass. Without either option the verifier
        checks everything, warns, and exits 3 (UNPINNED) instead of printing PASS.
    ... --key-id KEY_ID --key KEY   or   --key-file keys.txt (id=key lines)
        HMAC keys, for manifests signed before Ed25519.

It re-hashes every manifest and included asset; checks the chain, the checkpoints against it, that a
date range's segment is anchored (a checkpoint made after the range's end, or the chain head) and that no
signed checkpoint made within the range reaches past it; checks every signature, each dated inside its
key's validity period; accepts an absent asset or manifest file only when a signed retention event names
it (or assets were not requested, or it lies outside the case); names the keys that signed. It prints
PASS, or FAIL and one line per problem. Exit status: 0 PASS, 1 FAIL, 3 UNPINNED.
"""
