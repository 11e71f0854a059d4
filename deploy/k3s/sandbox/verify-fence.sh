#!/usr/bin/env bash
# Proves the sandbox network fence on a real cluster. It builds a sandbox namespace with the
# backend's own NetworkPolicies (fence-probe.yaml), a real egress proxy, and a probe pod carrying
# the agent's labels; then it checks from that pod that DNS, the metadata address, direct internet
# and the node's IP all fail while the proxy works, and that the same probes succeed from a
# control namespace without policies (so a failure is the fence, not a broken network).
#
# Usage:
#   deploy/k3s/sandbox/verify-fence.sh --proxy-image REGISTRY/agent-sandbox/proxy:TAG \
#       [--probe-image REGISTRY/busybox:1.36] [--allowed-host example.com] [--public-ip 1.1.1.1]
#
# Needs kubectl with rights to create namespaces, pods and exec into them (an operator's
# kubeconfig, not the control plane's). The probe image needs busybox's sh, nslookup, nc -z,
# wget and timeout; with the Kyverno policies installed it must come from your registry.
# Exit status: 0 all PASS, 1 any FAIL, 2 inconclusive, 64 usage.
set -euo pipefail

PROXY_IMAGE=""
PROBE_IMAGE="busybox:1.36"
ALLOWED_HOST="example.com"
DENIED_HOST="neverssl.com"
PUBLIC_IP="1.1.1.1"
METADATA_IP="169.254.169.254"
PROXY_PORT=3128
TIMEOUT=5

usage() {
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --proxy-image) PROXY_IMAGE="$2"; shift 2 ;;
    --probe-image) PROBE_IMAGE="$2"; shift 2 ;;
    --allowed-host) ALLOWED_HOST="$2"; shift 2 ;;
    --denied-host) DENIED_HOST="$2"; shift 2 ;;
    --public-ip) PUBLIC_IP="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "unknown argument: $1" >&2; usage >&2; exit 64 ;;
  esac
done
if [[ -z "$PROXY_IMAGE" ]]; then
  echo "missing --proxy-image (the agent-sandbox/proxy image your nodes can pull)" >&2
  exit 64
fi

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
RUN_ID="fenceprobe"
NS="agent-run-${RUN_ID}"
CONTROL_NS="agent-sandbox-fence-control"
EXPIRES="$(( $(date +%s) + 1800 ))"
FAILURES=0
INCONCLUSIVE=0

cleanup() {
  kubectl delete namespace "$NS" "$CONTROL_NS" --ignore-not-found --wait=false >/dev/null 2>&1 || true
}
trap cleanup EXIT

if kubectl get namespace "$NS" >/dev/null 2>&1; then
  echo "namespace $NS already exists (a previous run still terminating?); delete it and retry" >&2
  trap - EXIT
  exit 1
fi

RUNTIME_CLASS_LINE=""
if kubectl get runtimeclass gvisor >/dev/null 2>&1; then
  RUNTIME_CLASS_LINE="runtimeClassName: gvisor"
  echo "INFO  RuntimeClass gvisor found: probe pods run under gVisor"
else
  echo "INFO  RuntimeClass gvisor not found: probe pods use the node's default runtime"
fi

DNS_IP="$(kubectl -n kube-system get service kube-dns -o jsonpath='{.spec.clusterIP}')"
API_IP="$(kubectl -n default get service kubernetes -o jsonpath='{.spec.clusterIP}')"
echo "INFO  cluster DNS $DNS_IP, API $API_IP, public probe $PUBLIC_IP"

# Namespace first, then the fence, then pods: the order the backend uses.
kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Namespace
metadata:
  name: $NS
  labels:
    agent-sandbox.dev/run-id: "$RUN_ID"
    agent-sandbox.dev/agent: fence-probe
    agent-sandbox.dev/expires-at: "$EXPIRES"
    app.kubernetes.io/managed-by: agent-sandbox
    pod-security.kubernetes.io/enforce: restricted
    pod-security.kubernetes.io/enforce-version: v1.31
---
apiVersion: v1
kind: Namespace
metadata:
  name: $CONTROL_NS
YAML
kubectl apply -f "$HERE/fence-probe.yaml" >/dev/null

pod_spec() {
  # $1 name, $2 namespace, $3 role label (empty for the control pod), $4 image, $5 args (YAML list)
  local labels="app.kubernetes.io/name: fence-probe"
  if [[ -n "$3" ]]; then
    labels="agent-sandbox.dev/run-id: \"$RUN_ID\"
    agent-sandbox.dev/role: $3"
  fi
  cat <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: $2
  labels:
    $labels
spec:
  $RUNTIME_CLASS_LINE
  automountServiceAccountToken: false
  enableServiceLinks: false
  restartPolicy: Never
  securityContext:
    runAsNonRoot: true
    runAsUser: 65532
    runAsGroup: 65532
    seccompProfile: {type: RuntimeDefault}
  containers:
    - name: main
      image: $4
      args: $5
      securityContext:
        runAsNonRoot: true
        allowPrivilegeEscalation: false
        readOnlyRootFilesystem: true
        capabilities: {drop: [ALL]}
      env:
        - name: AGENT_SANDBOX_PROXY_POLICY
          valueFrom:
            configMapKeyRef: {name: egress-policy, key: policy.json, optional: true}
      volumeMounts:
        - {name: tmp, mountPath: /tmp}
  volumes:
    - name: tmp
      emptyDir: {}
YAML
}

kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: ConfigMap
metadata:
  name: egress-policy
  namespace: $NS
data:
  policy.json: |
    {"listen":"0.0.0.0:$PROXY_PORT","allow":["$ALLOWED_HOST"],"instance_allow":null,"internal_cidrs":[],"hosts":{},"run_id":"$RUN_ID","decisions":"-"}
---
apiVersion: v1
kind: Service
metadata:
  name: egress-proxy
  namespace: $NS
spec:
  selector:
    agent-sandbox.dev/run-id: "$RUN_ID"
    agent-sandbox.dev/role: proxy
  ports:
    - {name: proxy, protocol: TCP, port: $PROXY_PORT, targetPort: $PROXY_PORT}
YAML
# The proxy image's launcher reads the policy from AGENT_SANDBOX_PROXY_POLICY, as the backend sets it.
pod_spec egress-proxy "$NS" proxy "$PROXY_IMAGE" '[]' | kubectl apply -f - >/dev/null
pod_spec agent-probe "$NS" agent "$PROBE_IMAGE" '["sleep", "1800"]' | kubectl apply -f - >/dev/null
pod_spec control-probe "$CONTROL_NS" "" "$PROBE_IMAGE" '["sleep", "1800"]' | kubectl apply -f - >/dev/null

kubectl -n "$NS" wait --for=condition=Ready pod/egress-proxy pod/agent-probe --timeout=180s >/dev/null
kubectl -n "$CONTROL_NS" wait --for=condition=Ready pod/control-probe --timeout=180s >/dev/null
PROXY_IP="$(kubectl -n "$NS" get service egress-proxy -o jsonpath='{.spec.clusterIP}')"
# The node the probe runs on: the one a sandbox could most easily reach.
NODE_IP="$(kubectl -n "$NS" get pod agent-probe -o jsonpath='{.status.hostIP}')"
echo "INFO  proxy Service at $PROXY_IP:$PROXY_PORT, probe pod on node $NODE_IP"

# Runs a shell command in a probe pod; succeeds when the command does.
probe() {
  local ns="$1" pod="$2" cmd="$3"
  kubectl -n "$ns" exec "$pod" -- sh -c "$cmd" >/dev/null 2>&1
}

# A path the fence must shut: fails from the agent's pod, works from the control namespace.
expect_blocked() {
  local what="$1" cmd="$2"
  if probe "$NS" agent-probe "$cmd"; then
    echo "FAIL  $what: reachable from the sandbox (is k3s's network policy controller running?)"
    FAILURES=$((FAILURES + 1))
  elif probe "$CONTROL_NS" control-probe "$cmd"; then
    echo "PASS  $what: blocked in the sandbox, reachable from the control namespace"
  else
    echo "INCONCLUSIVE  $what: blocked in the sandbox, but unreachable from the control namespace too"
    INCONCLUSIVE=$((INCONCLUSIVE + 1))
  fi
}

expect_open() {
  local what="$1" cmd="$2"
  if probe "$NS" agent-probe "$cmd"; then
    echo "PASS  $what"
  else
    echo "FAIL  $what"
    FAILURES=$((FAILURES + 1))
  fi
}

expect_refused() {
  local what="$1" cmd="$2"
  if probe "$NS" agent-probe "$cmd"; then
    echo "FAIL  $what"
    FAILURES=$((FAILURES + 1))
  else
    echo "PASS  $what"
  fi
}

expect_blocked "DNS (UDP) to $DNS_IP" "timeout $TIMEOUT nslookup kubernetes.default.svc.cluster.local $DNS_IP"
expect_blocked "DNS (TCP) to $DNS_IP:53" "nc -z -w $TIMEOUT $DNS_IP 53"
expect_blocked "metadata service $METADATA_IP" "wget -q -T $TIMEOUT -O /dev/null http://$METADATA_IP/"
expect_blocked "direct internet $PUBLIC_IP:443" "nc -z -w $TIMEOUT $PUBLIC_IP 443"
expect_blocked "node $NODE_IP:10250 (kubelet)" "nc -z -w $TIMEOUT $NODE_IP 10250"
expect_blocked "Kubernetes API via $API_IP:443" "nc -z -w $TIMEOUT $API_IP 443"
expect_open "proxy fetches allowed http://$ALLOWED_HOST/" \
  "http_proxy=http://$PROXY_IP:$PROXY_PORT wget -q -T 15 -O /dev/null http://$ALLOWED_HOST/"
expect_refused "proxy refuses http://$DENIED_HOST/ (not on the allow-list)" \
  "http_proxy=http://$PROXY_IP:$PROXY_PORT wget -q -T 15 -O /dev/null http://$DENIED_HOST/"

echo "INFO  proxy decisions:"
kubectl -n "$NS" logs egress-proxy | grep '^{' | sed 's/^/      /' || true

if [[ $FAILURES -gt 0 ]]; then
  echo "RESULT: FAIL ($FAILURES failed, $INCONCLUSIVE inconclusive)"
  exit 1
fi
if [[ $INCONCLUSIVE -gt 0 ]]; then
  echo "RESULT: INCONCLUSIVE ($INCONCLUSIVE probes could not be shown to work without the fence)"
  exit 2
fi
echo "RESULT: PASS (the fence holds)"
