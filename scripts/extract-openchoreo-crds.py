#!/usr/bin/env python3
"""Bundle the CRD schemas of the OpenChoreo kinds kiln renders from into core/data/openchoreo/.

Source: a checkout of https://github.com/openchoreo/openchoreo (Apache-2.0). Upstream generates
its CRDs from the typed Go structs of `api/v1alpha1/*_types.go` with controller-gen, into
`config/crd/bases/openchoreo.dev_<plural>.yaml`; kiln validates each document's `spec` against
the `v1alpha1` schema of its kind (core/src/component/crd.rs).

Writes (byte-identical on every run for the same commit):
  crds.json   kind -> the openAPIV3Schema of `spec`, descriptions dropped (they are prose for
              `kubectl explain`, not rules), sorted keys, one kind per line
  VERSION     the upstream commit and the source directory

Usage: scripts/extract-openchoreo-crds.py CHECKOUT
CHECKOUT is a local clone of openchoreo/openchoreo at the commit to follow (the one
docs/component-types.md records); the script never touches the network.
"""

import json
import os
import subprocess
import sys

import yaml

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "core", "data", "openchoreo")
SOURCE = "config/crd/bases"
VERSION = "v1alpha1"

# The upstream kinds kiln reads into definitions (core/src/component/kinds.rs). Platform kinds
# that pass through (Environment, DataPlane, Project, ...) are not validated, so not bundled.
KINDS = [
    "ClusterComponentType",
    "ClusterProjectType",
    "ClusterResourceType",
    "ClusterTrait",
    "Component",
    "ComponentRelease",
    "ComponentType",
    "ProjectReleaseBinding",
    "ProjectType",
    "ReleaseBinding",
    "Resource",
    "ResourceRelease",
    "ResourceReleaseBinding",
    "ResourceType",
    "Trait",
    "Workload",
]


def strip(node):
    """The schema without `description` (at any depth; a property named `description` stays)."""
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k == "description" and isinstance(v, str):
                continue
            if k == "properties" and isinstance(v, dict):
                out[k] = {name: strip(s) for name, s in v.items()}
            else:
                out[k] = strip(v)
        return out
    if isinstance(node, list):
        return [strip(x) for x in node]
    return node


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    checkout = sys.argv[1]
    base = os.path.join(checkout, SOURCE)
    schemas = {}
    for name in sorted(os.listdir(base)):
        if not name.startswith("openchoreo.dev_") or not name.endswith(".yaml"):
            continue
        with open(os.path.join(base, name), encoding="utf-8") as f:
            crd = yaml.safe_load(f)
        kind = crd["spec"]["names"]["kind"]
        if kind not in KINDS:
            continue
        versions = [v for v in crd["spec"]["versions"] if v["name"] == VERSION]
        if len(versions) != 1:
            sys.exit(f"{name}: expected one {VERSION} version")
        root = versions[0]["schema"]["openAPIV3Schema"]
        spec = root.get("properties", {}).get("spec")
        if spec is None:
            sys.exit(f"{name}: no spec in the schema")
        schemas[kind] = strip(spec)
    missing = sorted(set(KINDS) - set(schemas))
    if missing:
        sys.exit(f"no CRD for {', '.join(missing)} under {base}")

    commit = subprocess.run(
        ["git", "-C", checkout, "rev-parse", "HEAD"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    os.makedirs(OUT, exist_ok=True)
    lines = [
        json.dumps(k) + ":" + json.dumps(schemas[k], sort_keys=True, separators=(",", ":"))
        for k in sorted(schemas)
    ]
    with open(os.path.join(OUT, "crds.json"), "w", encoding="utf-8") as f:
        f.write("{\n" + ",\n".join(lines) + "\n}\n")
    with open(os.path.join(OUT, "VERSION"), "w", encoding="utf-8") as f:
        f.write(
            "repository=https://github.com/openchoreo/openchoreo\n"
            f"commit={commit}\n"
            f"source={SOURCE}/openchoreo.dev_*.yaml ({VERSION}, spec only)\n"
            "license=Apache-2.0 (LICENSE in this directory)\n"
        )


if __name__ == "__main__":
    main()
