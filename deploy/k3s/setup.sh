#!/usr/bin/env bash
# Takes a bare k3s cluster to a running Agent Sandbox control plane, one checked step at a time.
# Each step is a subcommand, in the order docs/backends/k8s.md walks through them; every command
# that page shows is one this script (or sandbox/verify-fence.sh) runs, and a test in the build
# (DocCommandsTest) fails if the page shows one that no script here runs.
#
# Usage:
#   deploy/k3s/setup.sh STEP [OPTIONS]      (deploy/k3s/setup.sh STEP --help for the step's own)
#
# Steps:
#   node             on each node, as root: NetworkPolicy enforced, gVisor installed and wired in
#   gvisor           the RuntimeClass gvisor, its handler, and a pod that really runs on gVisor
#   addresses        the nodes' and the API server's addresses, as flags for serve
#   bundle           apply the control plane, the admission policy and the Kyverno policies
#   kyverno-test     Kyverno's own engine, then the cluster, refuse the deliberately bad objects
#   admission-check  the control plane's ServiceAccount cannot write outside agent-run-*
#   db-secret        the store's Secret from AGENT_SANDBOX_DB, then wait for the control plane
#   plan             a plan through the API: the whole bundle a run would create, created nowhere
#
# Then prove the fence: deploy/k3s/sandbox/verify-fence.sh --help.
# Runs from any directory (paths are the repository's). Needs kubectl with an operator's
# kubeconfig (cluster-admin, which may impersonate), except `node` (run on the node) and `plan`
# (curl). Exit status: 0 every check passed, 1 a check failed, 64 usage.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

LAUNCHER="system:serviceaccount:agent-sandbox:agent-sandbox"
FAILURES=0

usage() {
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
}

pass() { echo "PASS  $*"; }
fail() {
  echo "FAIL  $*"
  FAILURES=$((FAILURES + 1))
}
die() {
  echo "$*" >&2
  exit 1
}
need() {
  command -v "$1" >/dev/null 2>&1 || die "running $STEP: $1 is not on PATH ($2)"
}
finish() {
  if [[ $FAILURES -gt 0 ]]; then
    echo "RESULT: FAIL ($FAILURES failed)"
    exit 1
  fi
  echo "RESULT: PASS"
}
# Reads a secret the step needs from the terminal, without echo, when the variable is unset: so it
# stays out of the shell's history and every process's command line.
ask_secret() {
  if [[ -z "${!1:-}" && -t 0 ]]; then
    read -rsp "$1: " "$1"
    echo >&2
  fi
}
# Runs one step's option loop: every step takes --help; $1 is the step's usage text.
no_options() {
  local text="$1"
  shift
  case "${1:-}" in
    "") ;;
    -h|--help) echo "$text"; exit 0 ;;
    *) echo "unknown argument to $STEP: $1" >&2; echo "$text" >&2; exit 64 ;;
  esac
}

step_node() {
  no_options "deploy/k3s/setup.sh node
  On a k3s node (server or agent), as root. Checks that the k3s process and its configuration do
  not turn NetworkPolicy off (--disable-network-policy), warns when flannel is replaced
  (--flannel-backend=none: your CNI must enforce policies), and checks gVisor: runsc and
  containerd-shim-runsc-v1 on PATH and a containerd template that adds the runsc runtime.
  Changes nothing." "$@"
  local args config
  args="$(ps -eo args= | grep -E '^(/[^ ]*/)?k3s (server|agent)( |$)' || true)"
  [[ -n "$args" ]] || die "reading the k3s process on $(hostname): none running (run this on a k3s node)"
  config="$(cat /etc/rancher/k3s/config.yaml /etc/rancher/k3s/config.yaml.d/*.yaml 2>/dev/null || true)"
  if printf '%s\n%s\n' "$args" "$config" | grep -Eq -- '(--)?disable-network-policy(=true|: *true| |$)'; then
    fail "k3s runs with disable-network-policy: NetworkPolicy is not enforced and nothing is fenced"
  else
    pass "k3s's embedded network policy controller is on (no disable-network-policy)"
  fi
  if printf '%s\n%s\n' "$args" "$config" | grep -Eq -- 'flannel-backend(=| *: *"?)none'; then
    echo "WARN  flannel-backend=none: the CNI you installed must enforce NetworkPolicy (verify-fence.sh proves it)"
  fi
  local binary
  for binary in runsc containerd-shim-runsc-v1; do
    if command -v "$binary" >/dev/null 2>&1; then
      pass "$binary at $(command -v "$binary")"
    else
      fail "$binary not on PATH (install gVisor's release binaries: gvisor.dev/docs/user_guide/install)"
    fi
  done
  local dir=/var/lib/rancher/k3s/agent/etc/containerd template found=""
  for template in "$dir/config.toml.tmpl" "$dir/config-v3.toml.tmpl"; do
    if [[ -f "$template" ]]; then
      found=yes
      if grep -q 'runtimes.runsc\]' "$template" && grep -q 'io.containerd.runsc.v1' "$template"; then
        pass "$template adds the runsc runtime"
      else
        fail "$template does not add the runsc runtime (see docs/backends/k8s.md, step 2)"
      fi
    fi
  done
  [[ -n "$found" ]] || fail "no containerd template in $dir (create config.toml.tmpl or config-v3.toml.tmpl, then restart k3s)"
  finish
}

step_gvisor() {
  local image="busybox:1.36" handlers=() text="deploy/k3s/setup.sh gvisor [--image IMAGE] [--runtime-handler HANDLER]...
  Applies deploy/k3s/sandbox/runtimeclass-gvisor.yaml, checks that its handler is a trusted one
  (--runtime-handler, runsc by default; the backend treats any other as absent), and runs a pod
  named gvisor-check under it in the default namespace that must print gVisor's kernel banner.
  --image is the pod's image (default busybox:1.36; your registry's copy once Kyverno runs)."
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --image) image="$2"; shift 2 ;;
      --runtime-handler) handlers+=("$2"); shift 2 ;;
      -h|--help) echo "$text"; exit 0 ;;
      *) echo "unknown argument to gvisor: $1" >&2; echo "$text" >&2; exit 64 ;;
    esac
  done
  [[ ${#handlers[@]} -gt 0 ]] || handlers=(runsc)
  need kubectl "install kubectl and point it at the cluster"
  kubectl apply -f deploy/k3s/sandbox/runtimeclass-gvisor.yaml
  local handler trusted=""
  handler="$(kubectl get runtimeclass gvisor -o jsonpath='{.handler}')"
  for h in "${handlers[@]}"; do [[ "$h" == "$handler" ]] && trusted=yes; done
  if [[ -z "$trusted" ]]; then
    fail "RuntimeClass gvisor has handler '$handler', not one of: ${handlers[*]} (the backend treats it as absent)"
    finish
  fi
  pass "RuntimeClass gvisor has the trusted handler $handler"
  kubectl delete pod gvisor-check --ignore-not-found --timeout=60s >/dev/null
  local out
  # Bounded: the pod must start within two minutes, and the whole check ends within three.
  out="$(timeout 180 kubectl run gvisor-check --rm -i --restart=Never --image="$image" \
    --pod-running-timeout=2m --overrides='{"spec":{"runtimeClassName":"gvisor"}}' -- dmesg 2>&1 || true)"
  if grep -q 'Starting gVisor' <<<"$out"; then
    pass "a pod under RuntimeClass gvisor runs on gVisor's kernel: $(grep -m 1 'Starting gVisor' <<<"$out")"
  else
    fail "a pod under RuntimeClass gvisor did not print gVisor's banner (is runsc wired into containerd on its node? kubectl describe pod gvisor-check): $(tail -n 3 <<<"$out")"
    kubectl delete pod gvisor-check --ignore-not-found --wait=false >/dev/null 2>&1 || true
  fi
  finish
}

step_addresses() {
  no_options "deploy/k3s/setup.sh addresses
  Lists every node's addresses and the API server's own addresses (the endpoints behind the
  kubernetes Service), and prints them as the serve flags that except them from every proxy's
  egress. Private addresses are excepted already unless an agent's internal range covers them;
  public ones (some clouds' nodes, a managed API endpoint) need the flags. Prefer the node
  subnet's range over /32s if nodes come and go. Changes nothing." "$@"
  need kubectl "install kubectl and point it at the cluster"
  kubectl get nodes -o wide
  local nodes api address
  nodes="$(kubectl get nodes -o jsonpath='{.items[*].status.addresses[?(@.type=="InternalIP")].address} {.items[*].status.addresses[?(@.type=="ExternalIP")].address}')"
  api="$(kubectl -n default get endpointslices -l kubernetes.io/service-name=kubernetes \
    -o jsonpath='{.items[*].endpoints[*].addresses[*]}')"
  [[ -n "$api" ]] || die "reading the API server's endpoints in default: none found (kubectl -n default get endpointslices -l kubernetes.io/service-name=kubernetes)"
  echo "# serve flags (args of the Deployment in deploy/k3s/sandbox/agent-sandbox.yaml):"
  for address in $(tr ' ' '\n' <<<"$nodes" | sort -u); do
    [[ "$address" == *:* ]] && echo "- --k8s-node-cidr=$address/128" || echo "- --k8s-node-cidr=$address/32"
  done
  for address in $(tr ' ' '\n' <<<"$api" | sort -u); do
    [[ "$address" == *:* ]] && echo "- --k8s-apiserver-cidr=$address/128" || echo "- --k8s-apiserver-cidr=$address/32"
  done
}

step_bundle() {
  local kyverno=yes text="deploy/k3s/setup.sh bundle [--without-kyverno]
  Applies deploy/k3s/sandbox/agent-sandbox.yaml (the control plane's namespace, NetworkPolicies,
  ServiceAccount, RBAC, registry ConfigMap and Deployment), the ValidatingAdmissionPolicy
  deploy/k3s/sandbox/admission/restrict-launcher.yaml, and the Kyverno policies in
  deploy/k3s/sandbox/kyverno/ (refused when Kyverno is not installed, unless --without-kyverno).
  Set your registry and images in agent-sandbox.yaml first."
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --without-kyverno) kyverno=""; shift ;;
      -h|--help) echo "$text"; exit 0 ;;
      *) echo "unknown argument to bundle: $1" >&2; echo "$text" >&2; exit 64 ;;
    esac
  done
  need kubectl "install kubectl and point it at the cluster"
  if [[ -n "$kyverno" ]] && ! kubectl get crd clusterpolicies.kyverno.io >/dev/null 2>&1; then
    die "applying the Kyverno policies: the CRD clusterpolicies.kyverno.io is not installed (install Kyverno 1.13 or newer, or pass --without-kyverno)"
  fi
  if grep -q 'prefix: registry.example.internal' deploy/k3s/sandbox/agent-sandbox.yaml; then
    echo "WARN  agent-sandbox.yaml still names registry.example.internal: set your registry and images"
  fi
  kubectl apply -f deploy/k3s/sandbox/agent-sandbox.yaml
  kubectl apply -f deploy/k3s/sandbox/admission/restrict-launcher.yaml
  if [[ -n "$kyverno" ]]; then
    kubectl apply -f deploy/k3s/sandbox/kyverno/
  fi
}

# kyverno apply's report: each expected policy must have failed for the resource.
expect_kyverno_failures() {
  local what="$1" out="$2" policy
  shift 2
  for policy in "$@"; do
    if grep -Eq "policy $policy -> resource .* failed" <<<"$out"; then
      pass "$what: $policy refuses it"
    else
      fail "$what: $policy did not refuse it (kyverno apply said: $(tail -n 2 <<<"$out" | tr '\n' ' '))"
    fi
  done
}

step_kyverno_test() {
  no_options "deploy/k3s/setup.sh kyverno-test
  Runs Kyverno's own engine (the kyverno CLI) on the policies in deploy/k3s/sandbox/kyverno/ and
  the deliberately bad objects in deploy/k3s/sandbox/kyverno/test/: every pod policy must refuse
  bad-pod.yaml, restrict-launcher must refuse both bad namespaces when the control plane's
  ServiceAccount asks. Then the cluster's Kyverno must refuse bad-pod.yaml in a namespace
  agent-run-x it creates and deletes (a server-side dry run: nothing is created)." "$@"
  need kyverno "install the Kyverno CLI of your Kyverno's version: kyverno.io/docs/kyverno-cli"
  need kubectl "install kubectl and point it at the cluster"
  local out
  out="$(kyverno apply deploy/k3s/sandbox/kyverno/ --resource deploy/k3s/sandbox/kyverno/test/bad-pod.yaml 2>&1 || true)"
  expect_kyverno_failures "bad-pod.yaml" "$out" agent-sandbox-disallow-privileged \
    agent-sandbox-disallow-host-path agent-sandbox-disallow-host-namespaces \
    agent-sandbox-require-non-root agent-sandbox-restrict-seccomp-strict agent-sandbox-require-runtime-class
  out="$(kyverno apply deploy/k3s/sandbox/kyverno/restrict-launcher.yaml \
    --resource deploy/k3s/sandbox/kyverno/test/bad-namespace.yaml \
    --userinfo deploy/k3s/sandbox/kyverno/test/launcher-userinfo.yaml 2>&1 || true)"
  expect_kyverno_failures "bad-namespace.yaml as the launcher" "$out" agent-sandbox-restrict-launcher
  out="$(kyverno apply deploy/k3s/sandbox/kyverno/restrict-launcher.yaml \
    --resource deploy/k3s/sandbox/kyverno/test/bad-namespace-no-pod-security.yaml \
    --userinfo deploy/k3s/sandbox/kyverno/test/launcher-userinfo.yaml 2>&1 || true)"
  expect_kyverno_failures "bad-namespace-no-pod-security.yaml as the launcher" "$out" agent-sandbox-restrict-launcher
  local created=""
  if ! kubectl get namespace agent-run-x >/dev/null 2>&1; then
    kubectl create namespace agent-run-x >/dev/null
    created=yes
  fi
  out="$(kubectl apply --dry-run=server -f deploy/k3s/sandbox/kyverno/test/bad-pod.yaml 2>&1 || true)"
  [[ -z "$created" ]] || kubectl delete namespace agent-run-x --wait=false >/dev/null
  if grep -q 'admission webhook "validate.kyverno.svc-fail" denied the request' <<<"$out"; then
    pass "the cluster's Kyverno refuses bad-pod.yaml"
  else
    fail "the cluster's Kyverno did not refuse bad-pod.yaml (is Kyverno running? kubectl get clusterpolicies): $(tail -n 2 <<<"$out" | tr '\n' ' ')"
  fi
  finish
}

# One request as the control plane's ServiceAccount (a server-side dry run: nothing is written)
# that must be refused. $1 says what it tries; $2 is "admission" when RBAC alone would allow it, so
# only the admission policy can be what refuses it.
expect_launcher_refused() {
  local what="$1" by="$2" out
  shift 2
  if out="$("$@" 2>&1)"; then
    fail "the launcher may $what: admitted ($out)"
  elif grep -q 'cannot impersonate' <<<"$out"; then
    die "impersonating $LAUNCHER: refused ($out) (run this with a kubeconfig that may impersonate, such as cluster-admin)"
  elif grep -q "ValidatingAdmissionPolicy 'agent-sandbox-restrict-launcher'" <<<"$out"; then
    pass "the launcher may not $what: refused by the admission policy"
  elif [[ "$by" == admission ]]; then
    fail "the launcher may not $what, but the admission policy is not what refused it: $out"
  elif grep -q 'admission webhook .*kyverno' <<<"$out"; then
    pass "the launcher may not $what: refused by Kyverno"
  elif grep -q 'is forbidden: User' <<<"$out"; then
    pass "the launcher may not $what: refused by RBAC"
  else
    fail "the launcher may not $what, but the answer was not a refusal: $out"
  fi
}

step_admission_check() {
  no_options "deploy/k3s/setup.sh admission-check
  Asks the API server, as the control plane's ServiceAccount ($LAUNCHER, by impersonation) and
  as server-side dry runs (nothing is written), for what a compromised control plane would try:
  a ConfigMap in kube-system (RBAC alone allows it), a Secret in default, the namespace
  kube-victim, an agent-run-* namespace without Pod Security labels, deleting kube-system. RBAC
  alone allows each of them (the launcher creates Secrets for run credentials), so each must be
  refused by the admission policy itself; a namespace the backend really creates must be
  admitted." "$@"
  need kubectl "install kubectl and point it at the cluster"
  kubectl get validatingadmissionpolicy agent-sandbox-restrict-launcher >/dev/null \
    || die "reading the ValidatingAdmissionPolicy agent-sandbox-restrict-launcher: not found (deploy/k3s/setup.sh bundle; Kubernetes 1.30 or newer)"
  kubectl get validatingadmissionpolicybinding agent-sandbox-restrict-launcher >/dev/null \
    || die "reading the ValidatingAdmissionPolicyBinding agent-sandbox-restrict-launcher: not found (deploy/k3s/setup.sh bundle)"
  if [[ "$(kubectl auth can-i create configmaps -n kube-system --as="$LAUNCHER")" == yes ]]; then
    echo "INFO  RBAC lets the launcher create ConfigMaps in kube-system: only admission stops it"
  fi
  expect_launcher_refused "create a ConfigMap in kube-system" admission \
    kubectl create configmap probe -n kube-system --as="$LAUNCHER" --dry-run=server
  expect_launcher_refused "create a Secret in default" admission \
    kubectl create secret generic probe -n default --as="$LAUNCHER" --dry-run=server
  expect_launcher_refused "create the namespace kube-victim" admission \
    kubectl create -f deploy/k3s/sandbox/kyverno/test/bad-namespace.yaml --as="$LAUNCHER" --dry-run=server
  expect_launcher_refused "create an agent-run-* namespace without Pod Security labels" admission \
    kubectl create -f deploy/k3s/sandbox/kyverno/test/bad-namespace-no-pod-security.yaml --as="$LAUNCHER" --dry-run=server
  expect_launcher_refused "delete the namespace kube-system" admission \
    kubectl delete namespace kube-system --as="$LAUNCHER" --dry-run=server
  local out
  if out="$(kubectl create --as="$LAUNCHER" --dry-run=server -f - 2>&1 <<YAML
apiVersion: v1
kind: Namespace
metadata:
  name: agent-run-admissioncheck
  labels:
    app.kubernetes.io/managed-by: agent-sandbox
    agent-sandbox.dev/run-id: admissioncheck
    agent-sandbox.dev/agent: setup
    agent-sandbox.dev/expires-at: "$(($(date +%s) + 600))"
    pod-security.kubernetes.io/enforce: restricted
    pod-security.kubernetes.io/enforce-version: v1.31
    pod-security.kubernetes.io/warn: restricted
    pod-security.kubernetes.io/warn-version: v1.31
    pod-security.kubernetes.io/audit: restricted
    pod-security.kubernetes.io/audit-version: v1.31
YAML
  )"; then
    pass "the launcher may create a managed agent-run-* namespace (what a run does)"
  else
    fail "the launcher may not create a managed agent-run-* namespace, so no run can start: $out"
  fi
  finish
}

step_db_secret() {
  no_options "deploy/k3s/setup.sh db-secret
  Creates or replaces the Secret agent-sandbox-db in the namespace agent-sandbox from the
  variable AGENT_SANDBOX_DB (jdbc:postgresql://HOST:5432/DB?user=...&password=...; asked for
  without echo when unset on a terminal), through a file only this user can read, never on a
  command line; then waits (3 minutes at most) for the
  Deployment agent-sandbox to roll out." "$@"
  need kubectl "install kubectl and point it at the cluster"
  ask_secret AGENT_SANDBOX_DB
  [[ "${AGENT_SANDBOX_DB:-}" == jdbc:postgresql://* ]] \
    || die "reading AGENT_SANDBOX_DB: unset or not a jdbc:postgresql:// URL (the replicas share one PostgreSQL store)"
  DB_URL_FILE="$(umask 077 && mktemp)"
  trap 'rm -f "$DB_URL_FILE"' EXIT
  printf '%s' "$AGENT_SANDBOX_DB" >"$DB_URL_FILE"
  kubectl -n agent-sandbox create secret generic agent-sandbox-db --from-file=url="$DB_URL_FILE" \
    --dry-run=client -o yaml | kubectl apply -f -
  kubectl -n agent-sandbox rollout status deployment/agent-sandbox --timeout=180s
}

step_plan() {
  local agent="helper" text="deploy/k3s/setup.sh plan [--agent NAME]
  Asks the control plane at AGENT_SANDBOX_URL (https://HOST) with the token in
  AGENT_SANDBOX_TOKEN (scope agent_sandbox.read; asked for without echo when unset on a terminal;
  sent to curl on standard input, never on a command line)
  what a run of the agent (default helper) would create, prints the answer, and checks that it is
  the k8s backend's bundle with the proxy-fence NetworkPolicy, and the runtime-check init
  container when the runtime is runsc. Creates nothing."
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --agent) agent="$2"; shift 2 ;;
      -h|--help) echo "$text"; exit 0 ;;
      *) echo "unknown argument to plan: $1" >&2; echo "$text" >&2; exit 64 ;;
    esac
  done
  need curl "install curl"
  [[ "$agent" =~ ^[a-z0-9]([a-z0-9._-]*[a-z0-9])?$ ]] || die "planning agent '$agent': not an agent name"
  [[ -n "${AGENT_SANDBOX_URL:-}" ]] || die "planning on the control plane: AGENT_SANDBOX_URL is unset (https://HOST)"
  ask_secret AGENT_SANDBOX_TOKEN
  [[ -n "${AGENT_SANDBOX_TOKEN:-}" ]] || die "planning on $AGENT_SANDBOX_URL: AGENT_SANDBOX_TOKEN is unset (a token with agent_sandbox.read)"
  local out
  out="$(printf 'Authorization: Bearer %s\n' "$AGENT_SANDBOX_TOKEN" | curl -sS --fail-with-body --max-time 30 \
    -X POST "$AGENT_SANDBOX_URL/api/admin/platform/agent-sandbox/plan" -H @- \
    -H 'Content-Type: application/json' -d "{\"agent\":\"$agent\",\"command\":[\"true\"]}" 2>&1)" \
    || die "planning agent $agent on $AGENT_SANDBOX_URL: $out"
  echo "$out"
  grep -Eq '"backend" *: *"k8s"' <<<"$out" && pass "the plan uses the k8s backend" \
    || fail "the plan does not use the k8s backend (is serve started with --kubernetes, and the agent's backend k8s or auto?)"
  grep -Eq '"available" *: *true' <<<"$out" && pass "the k8s backend is available" \
    || fail "the k8s backend is not available (its probe says why, above)"
  grep -Eq '"name" *: *"proxy-fence"' <<<"$out" && pass "the bundle holds the proxy-fence NetworkPolicy" \
    || fail "the bundle holds no proxy-fence NetworkPolicy"
  if grep -Eq '"runtime" *: *"runsc"' <<<"$out"; then
    grep -q 'runtime-check' <<<"$out" && pass "the agent's Job starts with the runtime-check init container" \
      || fail "the runtime is runsc but the agent's Job has no runtime-check init container"
  else
    echo "WARN  the runtime is not runsc: sandboxes would run under the node's default runtime"
  fi
  finish
}

STEP="${1:-}"
[[ $# -eq 0 ]] || shift
case "$STEP" in
  node) step_node "$@" ;;
  gvisor) step_gvisor "$@" ;;
  addresses) step_addresses "$@" ;;
  bundle) step_bundle "$@" ;;
  kyverno-test) step_kyverno_test "$@" ;;
  admission-check) step_admission_check "$@" ;;
  db-secret) step_db_secret "$@" ;;
  plan) step_plan "$@" ;;
  -h|--help) usage ;;
  "") usage >&2; exit 64 ;;
  *) echo "unknown step: $STEP" >&2; usage >&2; exit 64 ;;
esac
