#!/usr/bin/env bash
# k8s_examples.sh SPILLWAY SOURCE_ROOT — the Kubernetes examples in
# config/examples parse as YAML, and their pieces fit together: the
# ConfigMap the pods mount exists and holds a config `spillway check`
# accepts; SPILLWAY_CONFIG names the mounted file; the spill directory is a
# disk volume (never medium: Memory); and for the multi-node Indexed Job, the
# headless Service, the pods' subdomain, the c10d rendezvous endpoint (pod
# 0), its port and the node count agree. Needs Debian's python3-yaml
# (tools/setup-deps.sh installs it).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
spillway=$1
root=$2
make_scratch
/usr/bin/python3 -c 'import yaml' 2>/dev/null ||
    fail "PyYAML is missing: install Debian's python3-yaml (tools/setup-deps.sh does)"

for example in kubernetes-pod.yaml kubernetes-indexed-job.yaml; do
    /usr/bin/python3 - "$root/config/examples/$example" "$SCRATCH/${example%.yaml}.toml" <<'PY' ||
import sys, yaml

path, toml_out = sys.argv[1], sys.argv[2]
docs = [d for d in yaml.safe_load_all(open(path)) if d is not None]
by_kind = {}
for d in docs:
    by_kind.setdefault(d["kind"], []).append(d)
def need(cond, what):
    if not cond:
        sys.exit(f"{path}: {what}")

config_maps = {c["metadata"]["name"]: c for c in by_kind.get("ConfigMap", [])}
workloads = by_kind.get("Pod", []) + by_kind.get("Job", [])
need(len(config_maps) == 1 and len(workloads) == 1, "expected one ConfigMap and one Pod or Job")
work = workloads[0]
pod = work["spec"] if work["kind"] == "Pod" else work["spec"]["template"]["spec"]
volumes = {v["name"]: v for v in pod["volumes"]}
container = pod["containers"][0]
mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
env = {e["name"]: e.get("value") for e in container.get("env", [])}

# The config: a mounted ConfigMap volume, named by SPILLWAY_CONFIG.
cm_volumes = [n for n, v in volumes.items() if "configMap" in v]
need(len(cm_volumes) == 1, "one configMap volume")
cm_name = volumes[cm_volumes[0]]["configMap"]["name"]
need(cm_name in config_maps, f"the pod mounts ConfigMap {cm_name!r}, which the file does not define")
keys = list(config_maps[cm_name]["data"])
need(keys == ["spillway.toml"], f"ConfigMap keys {keys}")
need(env.get("SPILLWAY_CONFIG") == mounts[cm_volumes[0]] + "/spillway.toml",
     f"SPILLWAY_CONFIG={env.get('SPILLWAY_CONFIG')!r} is not the mounted spillway.toml")
open(toml_out, "w").write(config_maps[cm_name]["data"]["spillway.toml"])

# The spill directory: under the /spill mount, a disk emptyDir or hostPath.
spill = volumes.get("spill")
need(spill and mounts.get("spill") == "/spill", "a volume 'spill' mounted at /spill")
need("hostPath" in spill or ("emptyDir" in spill and (spill["emptyDir"] or {}).get("medium") != "Memory"),
     "the spill volume must be node disk (emptyDir without medium: Memory, or hostPath)")
need(container["command"][:3] == ["spillway", "run", "--"], "the command runs under `spillway run --`")

if work["kind"] == "Job":
    spec = work["spec"]
    need(spec["completionMode"] == "Indexed", "an Indexed Job")
    need(spec["completions"] == spec["parallelism"], "every node's pod runs at once (parallelism = completions)")
    services = by_kind.get("Service", [])
    need(len(services) == 1, "one Service")
    svc = services[0]
    need(svc["spec"].get("clusterIP") == "None", "the Service is headless")
    labels = work["spec"]["template"]["metadata"]["labels"]
    need(all(labels.get(k) == v for k, v in svc["spec"]["selector"].items()), "the Service selects the pods")
    need(pod["subdomain"] == svc["metadata"]["name"], "the pods' subdomain is the Service's name")
    args = dict(a[2:].split("=", 1) for a in container["args"] if a.startswith("--") and "=" in a)
    need(container["args"][0] == "torchrun", "the job starts torchrun")
    need(args["rdzv_backend"] == "c10d", "a c10d rendezvous")
    host, port = args["rdzv_endpoint"].rsplit(":", 1)
    need(host == f"{work['metadata']['name']}-0.{svc['metadata']['name']}", f"rendezvous at pod 0, not {host}")
    need(int(port) in [p["port"] for p in svc["spec"]["ports"]], "the rendezvous port is the Service's")
    need(int(port) in [p["containerPort"] for p in container["ports"]], "the container exposes the rendezvous port")
    need(int(args["nnodes"]) == spec["completions"], "--nnodes equals the Job's completions")
print(f"{path}: ok")
PY
        fail "$example does not hold together (see above)"
    "$spillway" check "$SCRATCH/${example%.yaml}.toml" >/dev/null ||
        fail "the ConfigMap's spillway.toml in $example is not a config the shim accepts"
done
echo "k8s_examples: ok"
