#!/usr/bin/env bash
# Proves the sandbox network fence on a real cluster. It builds a sandbox namespace with the
# backend's own NetworkPolicies (fence-probe.yaml), a real egress proxy, and a probe pod carrying
# the agent's labels; then it checks from that pod that DNS, the metadata address, direct internet
# and the node's IP all fail while the proxy works, and that the same probes succeed from a
# control namespace without policies (so a failure is the fence, not a broken network). From a
# pod carrying the proxy's labels it checks that the proxy's own egress cannot reach the node's
# kubelet, the API server or another namespace's pod, and on a dual-stack cluster it probes IPv6
# too. The agent's internal destination (fence-probe.yaml's range, bound to a target pod this
# script starts) must be reachable from the proxy's side on its port and on no other, through the
# real proxy as well, and never from the agent's pod. When the RuntimeClass gvisor exists, it
# checks that its handler is a trusted one and that a pod under it passes the same runtime check
# the backend runs before every agent (runtime-check.sh, which a test keeps identical to the
# backend's).
#
# Usage:
#   deploy/k3s/sandbox/verify-fence.sh --proxy-image REGISTRY/agent-sandbox/proxy:TAG \
#       [--probe-image REGISTRY/busybox:1.36] [--allowed-host example.com] [--public-ip 1.1.1.1]
#       [--runtime-handler runsc]... [--public-ipv6 2606:4700:4700::1111]
#   deploy/k3s/sandbox/verify-fence.sh --print-policies TARGET_IPV4
#       prints the NetworkPolicies it would apply for a target pod at TARGET_IPV4, and exits
#
# Needs kubectl with rights to create namespaces, pods and exec into them (an operator's
# kubeconfig, not the control plane's). The probe image needs busybox's sh, nslookup, nc -z,
# wget, timeout and httpd; with the Kyverno policies installed it must come from your registry.
# Exit status: 0 all PASS, 1 any FAIL, 2 inconclusive, 64 usage.
set -euo pipefail

PROXY_IMAGE=""
PROBE_IMAGE="busybox:1.36"
ALLOWED_HOST="example.com"
DENIED_HOST="neverssl.com"
PUBLIC_IP="1.1.1.1"
PUBLIC_IPV6="2606:4700:4700::1111"
RUNTIME_HANDLERS=()
METADATA_IP="169.254.169.254"
PROXY_PORT=3128
TIMEOUT=5
# fence-probe.yaml's internal destination: a placeholder range, replaced by the target pod's /32.
TARGET_PLACEHOLDER="192.0.2.1/32"
TARGET_PORT=8443
TARGET_OTHER_PORT=8444
PRINT_POLICIES_FOR=""
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

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
    --public-ipv6) PUBLIC_IPV6="$2"; shift 2 ;;
    --runtime-handler) RUNTIME_HANDLERS+=("$2"); shift 2 ;;
    --print-policies) PRINT_POLICIES_FOR="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "unknown argument: $1" >&2; usage >&2; exit 64 ;;
  esac
done
# fence-probe.yaml with its internal destination bound to the target pod's address; nothing else
# in the file changes, so the policies stay the backend's own (FenceProbeFileTest runs this).
render_policies() {
  local ip="$1" pattern="cidr: ${TARGET_PLACEHOLDER//./\\.}\$"
  if [[ ! "$ip" =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}$ ]]; then
    echo "binding the internal destination to $ip: not an IPv4 address (fence-probe.yaml is single-stack)" >&2
    return 64
  fi
  if [[ "$(grep -c -e "$pattern" "$HERE/fence-probe.yaml")" != 1 ]]; then
    echo "binding the internal destination in $HERE/fence-probe.yaml: the line 'cidr: $TARGET_PLACEHOLDER' is not there exactly once (regenerate the file)" >&2
    return 1
  fi
  sed -e "s#$pattern#cidr: $ip/32#" "$HERE/fence-probe.yaml"
}

if [[ -n "$PRINT_POLICIES_FOR" ]]; then
  render_policies "$PRINT_POLICIES_FOR"
  exit
fi
if [[ ${#RUNTIME_HANDLERS[@]} -eq 0 ]]; then
  RUNTIME_HANDLERS=(runsc)
fi
if [[ -z "$PROXY_IMAGE" ]]; then
  echo "missing --proxy-image (the agent-sandbox/proxy image your nodes can pull)" >&2
  exit 64
fi

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
HANDLER="$(kubectl get runtimeclass gvisor -o jsonpath='{.handler}' 2>/dev/null || true)"
if [[ -n "$HANDLER" ]]; then
  TRUSTED=""
  for h in "${RUNTIME_HANDLERS[@]}"; do [[ "$h" == "$HANDLER" ]] && TRUSTED=yes; done
  if [[ -n "$TRUSTED" ]]; then
    RUNTIME_CLASS_LINE="runtimeClassName: gvisor"
    echo "PASS  RuntimeClass gvisor has the trusted handler $HANDLER: probe pods run under it"
  else
    echo "FAIL  RuntimeClass gvisor has handler $HANDLER, not one of: ${RUNTIME_HANDLERS[*]} (the backend treats it as absent)"
    FAILURES=$((FAILURES + 1))
  fi
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

pod_spec() {
  # $1 name, $2 namespace, $3 role label (empty for the control pod), $4 image, $5 args (YAML list)
  local labels="app.kubernetes.io/name: fence-probe
    agent-sandbox.dev/probe: $1"
  if [[ -n "$3" ]]; then
    labels="agent-sandbox.dev/run-id: \"$RUN_ID\"
    agent-sandbox.dev/role: $3
    agent-sandbox.dev/probe: $1"
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

# The internal destination's target, outside the sandbox: a pod serving HTTP on the declared port
# and on another, named by a headless Service so cluster DNS answers with the pod's own address
# (the policy sees pod addresses, not ClusterIPs). It starts first: the fence needs its address.
pod_spec fence-target "$CONTROL_NS" "" "$PROBE_IMAGE" \
  "[\"sh\", \"-c\", \"echo fence-target > /tmp/index.html && httpd -p $TARGET_PORT -h /tmp && httpd -p $TARGET_OTHER_PORT -h /tmp && sleep 1800\"]" \
  | kubectl apply -f - >/dev/null
kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Service
metadata:
  name: fence-target
  namespace: $CONTROL_NS
spec:
  clusterIP: None
  selector:
    agent-sandbox.dev/probe: fence-target
  ports:
    - {name: declared, protocol: TCP, port: $TARGET_PORT}
    - {name: other, protocol: TCP, port: $TARGET_OTHER_PORT}
YAML
kubectl -n "$CONTROL_NS" wait --for=condition=Ready pod/fence-target --timeout=180s >/dev/null
TARGET_IP="$(kubectl -n "$CONTROL_NS" get pod fence-target -o jsonpath='{.status.podIPs[*].ip}' \
  | tr ' ' '\n' | grep -E '^[0-9]+(\.[0-9]+){3}$' | head -n 1 || true)"
if [[ -z "$TARGET_IP" ]]; then
  echo "reading the target pod's IPv4 address in $CONTROL_NS: none (fence-probe.yaml is single-stack; an IPv4 pod address is needed)" >&2
  exit 1
fi
TARGET_NAME="fence-target.$CONTROL_NS.svc.cluster.local"
render_policies "$TARGET_IP" | kubectl apply -f - >/dev/null

kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: ConfigMap
metadata:
  name: egress-policy
  namespace: $NS
data:
  # No "hosts" table: the proxy resolves through cluster DNS (a present table, even empty, replaces DNS).
  policy.json: |
    {"listen":"0.0.0.0:$PROXY_PORT","allow":["$ALLOWED_HOST","$TARGET_NAME:$TARGET_PORT","$TARGET_NAME:$TARGET_OTHER_PORT"],"instance_allow":null,"internal":[{"cidr":"$TARGET_IP/32","ports":[$TARGET_PORT]}],"run_id":"$RUN_ID","decisions":"-"}
---
apiVersion: v1
kind: Service
metadata:
  name: egress-proxy
  namespace: $NS
spec:
  # The real proxy only: proxy-probe carries the proxy's labels (so proxy-fence applies to it) too.
  selector:
    agent-sandbox.dev/run-id: "$RUN_ID"
    agent-sandbox.dev/role: proxy
    agent-sandbox.dev/probe: egress-proxy
  ports:
    - {name: proxy, protocol: TCP, port: $PROXY_PORT, targetPort: $PROXY_PORT}
YAML
# The proxy image's launcher reads the policy from AGENT_SANDBOX_PROXY_POLICY, as the backend sets it.
pod_spec egress-proxy "$NS" proxy "$PROXY_IMAGE" '[]' | kubectl apply -f - >/dev/null
pod_spec agent-probe "$NS" agent "$PROBE_IMAGE" '["sleep", "1800"]' | kubectl apply -f - >/dev/null
# The proxy's fence, without the proxy: a pod with its labels to probe the proxy's own egress.
pod_spec proxy-probe "$NS" proxy "$PROBE_IMAGE" '["sleep", "1800"]' | kubectl apply -f - >/dev/null
# The control pod also serves HTTP on 8080: "another namespace's pod" for the proxy-side probe.
pod_spec control-probe "$CONTROL_NS" "" "$PROBE_IMAGE" '["sh", "-c", "httpd -f -p 8080 -h /tmp & sleep 1800"]' \
  | kubectl apply -f - >/dev/null

kubectl -n "$NS" wait --for=condition=Ready pod/egress-proxy pod/agent-probe pod/proxy-probe --timeout=180s >/dev/null
kubectl -n "$CONTROL_NS" wait --for=condition=Ready pod/control-probe --timeout=180s >/dev/null
PROXY_IP="$(kubectl -n "$NS" get service egress-proxy -o jsonpath='{.spec.clusterIP}')"
# The node the probe runs on: the one a sandbox could most easily reach.
NODE_IP="$(kubectl -n "$NS" get pod agent-probe -o jsonpath='{.status.hostIP}')"
PROXY_NODE_IP="$(kubectl -n "$NS" get pod proxy-probe -o jsonpath='{.status.hostIP}')"
CONTROL_POD_IP="$(kubectl -n "$CONTROL_NS" get pod control-probe -o jsonpath='{.status.podIP}')"
# The API server's own address behind the kubernetes Service (k3s: the server node, port 6443).
API_ENDPOINT="$(kubectl -n default get endpointslices -l kubernetes.io/service-name=kubernetes \
  -o jsonpath='{.items[0].endpoints[0].addresses[0]}')"
API_ENDPOINT_PORT="$(kubectl -n default get endpointslices -l kubernetes.io/service-name=kubernetes \
  -o jsonpath='{.items[0].ports[0].port}')"
AGENT_IPS="$(kubectl -n "$NS" get pod agent-probe -o jsonpath='{.status.podIPs[*].ip}')"
echo "INFO  proxy Service at $PROXY_IP:$PROXY_PORT, probe pods on nodes $NODE_IP and $PROXY_NODE_IP"
echo "INFO  API server endpoint $API_ENDPOINT:$API_ENDPOINT_PORT, control pod $CONTROL_POD_IP"
echo "INFO  internal destination $TARGET_IP/32 on TCP $TARGET_PORT ($TARGET_NAME)"

# Runs a shell command in a probe pod; succeeds when the command does.
probe() {
  local ns="$1" pod="$2" cmd="$3"
  kubectl -n "$ns" exec "$pod" -- sh -c "$cmd" >/dev/null 2>&1
}

# A path the fence must shut: fails from the agent's pod, works from the control namespace.
expect_blocked() {
  expect_blocked_from agent-probe "$@"
}

# The same from a given pod of the sandbox (agent-probe, or proxy-probe for the proxy's egress).
expect_blocked_from() {
  local pod="$1" what="$2" cmd="$3"
  if probe "$NS" "$pod" "$cmd"; then
    echo "FAIL  $what: reachable from the sandbox's $pod (is k3s's network policy controller running?)"
    FAILURES=$((FAILURES + 1))
  elif probe "$CONTROL_NS" control-probe "$cmd"; then
    echo "PASS  $what: blocked in the sandbox, reachable from the control namespace"
  else
    echo "INCONCLUSIVE  $what: blocked in the sandbox, but unreachable from the control namespace too"
    INCONCLUSIVE=$((INCONCLUSIVE + 1))
  fi
}

expect_open() {
  expect_open_from agent-probe "$@"
}

expect_open_from() {
  local pod="$1" what="$2" cmd="$3"
  if probe "$NS" "$pod" "$cmd"; then
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

# The proxy's own egress: the cluster's machinery and other namespaces are out of its reach.
expect_blocked_from proxy-probe "proxy side: node $PROXY_NODE_IP:10250 (kubelet)" \
  "nc -z -w $TIMEOUT $PROXY_NODE_IP 10250"
expect_blocked_from proxy-probe "proxy side: Kubernetes API via $API_IP:443" "nc -z -w $TIMEOUT $API_IP 443"
expect_blocked_from proxy-probe "proxy side: API server $API_ENDPOINT:$API_ENDPOINT_PORT" \
  "nc -z -w $TIMEOUT $API_ENDPOINT $API_ENDPOINT_PORT"
expect_blocked_from proxy-probe "proxy side: another namespace's pod $CONTROL_POD_IP:8080" \
  "nc -z -w $TIMEOUT $CONTROL_POD_IP 8080"
expect_blocked_from proxy-probe "proxy side: metadata service $METADATA_IP" \
  "wget -q -T $TIMEOUT -O /dev/null http://$METADATA_IP/"

# The agent's internal destination: the proxy's, on its declared port only; never the agent's.
expect_open_from proxy-probe "proxy side: internal destination $TARGET_IP:$TARGET_PORT (declared port)" \
  "nc -z -w $TIMEOUT $TARGET_IP $TARGET_PORT"
expect_blocked_from proxy-probe "proxy side: internal destination $TARGET_IP:$TARGET_OTHER_PORT (undeclared port)" \
  "nc -z -w $TIMEOUT $TARGET_IP $TARGET_OTHER_PORT"
expect_blocked "internal destination $TARGET_IP:$TARGET_PORT directly from the agent" \
  "nc -z -w $TIMEOUT $TARGET_IP $TARGET_PORT"
expect_open "proxy fetches the internal destination http://$TARGET_NAME:$TARGET_PORT/" \
  "http_proxy=http://$PROXY_IP:$PROXY_PORT wget -q -T 15 -O /dev/null http://$TARGET_NAME:$TARGET_PORT/"
expect_refused "proxy refuses http://$TARGET_NAME:$TARGET_OTHER_PORT/ (allowed name, undeclared port)" \
  "http_proxy=http://$PROXY_IP:$PROXY_PORT wget -q -T 15 -O /dev/null http://$TARGET_NAME:$TARGET_OTHER_PORT/"

# IPv6, when the cluster gives pods IPv6 addresses (dual-stack).
if [[ "$AGENT_IPS" == *:* ]]; then
  expect_blocked "direct IPv6 internet [$PUBLIC_IPV6]:443" "nc -z -w $TIMEOUT $PUBLIC_IPV6 443"
  expect_blocked_from proxy-probe "proxy side: AWS's IPv6 metadata [fd00:ec2::254]:80" \
    "nc -z -w $TIMEOUT fd00:ec2::254 80"
  NODE_IPV6="$(kubectl get node "$(kubectl -n "$NS" get pod proxy-probe -o jsonpath='{.spec.nodeName}')" \
    -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}' | tr ' ' '\n' | grep : | head -n 1 || true)"
  if [[ -n "$NODE_IPV6" ]]; then
    expect_blocked_from proxy-probe "proxy side: node [$NODE_IPV6]:10250 (kubelet, IPv6)" \
      "nc -z -w $TIMEOUT $NODE_IPV6 10250"
  fi
else
  echo "INFO  pods have no IPv6 address (single-stack): IPv6 probes skipped"
fi

# The in-pod runtime proof: the backend's own check, in a pod under the RuntimeClass.
if [[ -n "$RUNTIME_CLASS_LINE" ]]; then
  kubectl -n "$NS" create configmap runtime-check --from-file=check.sh="$HERE/runtime-check.sh" >/dev/null
  kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: runtime-check
  namespace: $NS
  labels:
    agent-sandbox.dev/run-id: "$RUN_ID"
    agent-sandbox.dev/role: runtime-check
spec:
  runtimeClassName: gvisor
  automountServiceAccountToken: false
  enableServiceLinks: false
  restartPolicy: Never
  securityContext:
    runAsNonRoot: true
    runAsUser: 65532
    runAsGroup: 65532
    seccompProfile: {type: RuntimeDefault}
  containers:
    - name: check
      image: $PROXY_IMAGE
      command: ["/bin/sh", "/check/check.sh"]
      securityContext:
        runAsNonRoot: true
        allowPrivilegeEscalation: false
        readOnlyRootFilesystem: true
        capabilities: {drop: [ALL]}
      volumeMounts:
        - {name: check, mountPath: /check, readOnly: true}
  volumes:
    - name: check
      configMap: {name: runtime-check}
YAML
  PHASE=""
  for _ in $(seq 1 90); do
    PHASE="$(kubectl -n "$NS" get pod runtime-check -o jsonpath='{.status.phase}')"
    [[ "$PHASE" == Succeeded || "$PHASE" == Failed ]] && break
    sleep 2
  done
  if [[ "$PHASE" == Succeeded ]]; then
    echo "PASS  a pod under RuntimeClass gvisor runs on gVisor's kernel (the backend's runtime check passes)"
  else
    echo "FAIL  a pod under RuntimeClass gvisor did not pass the runtime check (phase ${PHASE:-unknown}):" \
      "$(kubectl -n "$NS" logs runtime-check 2>&1 | tail -n 1)"
    FAILURES=$((FAILURES + 1))
  fi
fi

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
