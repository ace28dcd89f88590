#!/usr/bin/env python3
"""An outside verifier of the hub's signed tree heads and Merkle proofs.

Written from RFC 9162 (section 2.1) and docs/audit.md alone, not from the hub's code: Python's
hashlib for SHA-256, and the Ed25519 signature checked by python's `cryptography` when installed,
else (or with VERIFY_WITH_OPENSSL=1) by `openssl pkeyutl -verify -rawin`.

    verify.py inclusion   --key KEY --head HEAD --proof PROOF --line LINE
    verify.py consistency --key KEY --old HEAD1 --new HEAD2 --proof PROOF
    verify.py root        --key KEY --head HEAD --export EXPORT.jsonl

KEY is the public key as `hub audit key` prints it (64 hex digits) or a file holding it; HEAD a
file holding one signed head (a JSON line); PROOF a file holding what `hub audit prove` or `hub
audit consistency` printed; LINE a file holding the record's line from `hub export`. It prints
`ok: ...` and exits 0, or prints `FAIL: ...` and exits 1.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile


class Fail(Exception):
    pass


def sha256(data):
    return hashlib.sha256(data).digest()


def leaf_hash(leaf):
    return sha256(b"\x00" + leaf)


def node_hash(left, right):
    return sha256(b"\x01" + left + right)


def mth(leaves):
    """RFC 9162 2.1.1: the Merkle Tree Hash of a list of leaf byte strings."""
    n = len(leaves)
    if n == 0:
        return sha256(b"")
    if n == 1:
        return leaf_hash(leaves[0])
    k = 1
    while k * 2 < n:
        k *= 2
    return node_hash(mth(leaves[:k]), mth(leaves[k:]))


def root_from_inclusion(index, size, leaf_hash_value, path):
    """RFC 9162 2.1.3.2."""
    if index >= size:
        raise Fail("leaf index %d is not below the tree size %d" % (index, size))
    fn, sn, r = index, size - 1, leaf_hash_value
    for p in path:
        if sn == 0:
            raise Fail("the inclusion proof is too long")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise Fail("the inclusion proof is too short")
    return r


def verify_consistency(first, second, first_hash, second_hash, path):
    """RFC 9162 2.1.4.2."""
    if first > second:
        raise Fail("the old tree is larger than the new one")
    if first == second:
        if path or first_hash != second_hash:
            raise Fail("equal sizes need equal roots and an empty proof")
        return
    if first == 0:
        if path:
            raise Fail("a proof from the empty tree is empty")
        return
    if not path:
        raise Fail("the consistency proof is empty")
    if first & (first - 1) == 0:
        path = [first_hash] + path
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise Fail("the consistency proof is too long")
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise Fail("the consistency proof is too short")
    if fr != first_hash:
        raise Fail("the proof does not lead to the old root %s" % first_hash.hex())
    if sr != second_hash:
        raise Fail("the proof does not lead to the new root %s" % second_hash.hex())


def ed25519_verify(public_key, signature, message):
    if os.environ.get("VERIFY_WITH_OPENSSL") != "1":
        try:
            return ed25519_verify_cryptography(public_key, signature, message)
        except ImportError:
            pass
    return ed25519_verify_openssl(public_key, signature, message)


def ed25519_verify_cryptography(public_key, signature, message):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.exceptions import InvalidSignature
    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(signature, message)
        return True
    except InvalidSignature:
        return False


def ed25519_verify_openssl(public_key, signature, message):
    # SubjectPublicKeyInfo of an Ed25519 key (RFC 8410): a fixed 12-byte prefix, then the key.
    der = bytes.fromhex("302a300506032b6570032100") + public_key
    with tempfile.TemporaryDirectory() as d:
        files = {"key.der": der, "sig": signature, "msg": message}
        for name, data in files.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
        result = subprocess.run(["openssl", "pkeyutl", "-verify", "-pubin", "-keyform", "DER",
                                 "-inkey", os.path.join(d, "key.der"), "-rawin",
                                 "-in", os.path.join(d, "msg"), "-sigfile", os.path.join(d, "sig")],
                                capture_output=True)
        return result.returncode == 0


def read_key(text):
    if os.path.exists(text):
        text = open(text).read()
    text = text.strip()
    try:
        key = bytes.fromhex(text)
    except ValueError:
        raise Fail("the key must be 64 hex digits")
    if len(key) != 32:
        raise Fail("the key must be 32 bytes")
    return key


def read_head(path, key):
    head = json.loads(open(path, "rb").read())
    size, root, time = head["size"], bytes.fromhex(head["root"]), head["time"]
    # docs/audit.md: the signature covers "hub-tree-head/1 <size> <root hex> <time>".
    message = ("hub-tree-head/1 %d %s %s" % (size, root.hex(), time)).encode()
    if not ed25519_verify(key, bytes.fromhex(head["signature"]), message):
        raise Fail("%s: the signature is not the hub key's" % path)
    return size, root, time


def read_line(path):
    data = open(path, "rb").read()
    return data.rstrip(b"\r\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["inclusion", "consistency", "root"])
    parser.add_argument("--key", required=True)
    parser.add_argument("--head")
    parser.add_argument("--old")
    parser.add_argument("--new")
    parser.add_argument("--proof")
    parser.add_argument("--line")
    parser.add_argument("--export")
    args = parser.parse_args()
    key = read_key(args.key)
    if args.mode == "inclusion":
        size, root, time = read_head(args.head, key)
        proof = json.loads(open(args.proof).read())
        line = read_line(args.line)
        seq = json.loads(line)["seq"]
        if proof["seq"] != seq or proof["size"] != size:
            raise Fail("the proof is for record %s of %s, not record %d of %d" % (proof["seq"], proof["size"], seq, size))
        got = root_from_inclusion(seq - 1, size, leaf_hash(line), [bytes.fromhex(h) for h in proof["path"]])
        if got != root:
            raise Fail("record %d: its line and the proof lead to %s, the head signed %s" % (seq, got.hex(), root.hex()))
        print("ok: record %d is in the tree of %d signed at %s" % (seq, size, time))
    elif args.mode == "consistency":
        s1, r1, t1 = read_head(args.old, key)
        s2, r2, t2 = read_head(args.new, key)
        proof = json.loads(open(args.proof).read())
        if proof["from"] != s1 or proof["to"] != s2:
            raise Fail("the proof is from %s to %s, the heads are %d and %d" % (proof["from"], proof["to"], s1, s2))
        verify_consistency(s1, s2, r1, r2, [bytes.fromhex(h) for h in proof["path"]])
        print("ok: the tree of %d signed at %s extends the tree of %d signed at %s" % (s2, t2, s1, t1))
    else:
        size, root, time = read_head(args.head, key)
        lines = [l.rstrip(b"\r\n") for l in open(args.export, "rb").read().split(b"\n") if l.strip()]
        if len(lines) < size:
            raise Fail("the export holds %d records, the head %d" % (len(lines), size))
        got = mth(lines[:size])
        if got != root:
            raise Fail("the export's first %d lines hash to %s, the head signed %s" % (size, got.hex(), root.hex()))
        print("ok: the export's first %d records are the tree signed at %s" % (size, time))


if __name__ == "__main__":
    try:
        main()
    except (Fail, KeyError, ValueError) as e:
        print("FAIL: %s" % e)
        sys.exit(1)
