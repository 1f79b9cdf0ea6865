#!/usr/bin/env bash
# make demo: from a fresh clone to three running proxies and back, against the standalone
# Proxmox simulator, with nothing downloaded.
#
#   1. builds the provider and the simulator into bin/demo/ (the Go build cache and the
#      binaries' build IDs make a second run relink nothing);
#   2. starts the simulator at realistic latencies (SPEED divides them; default below);
#   3. writes a Terraform CLI config with dev_overrides pointing at the built provider
#      (no terraform init, no registry);
#   4. checks examples/provider/provider.tf against the simulator (a proxy_health read);
#   5. applies examples/demo: a proxy_health check gating three proxy_vm with a Squid cloud-init;
#   6. shows `terraform plan -detailed-exitcode` is then empty;
#   7. destroys, and asks the simulator through the Proxmox API that no VM and no seed ISO is
#      left (the VMs of every node, the ISOs of the seed storage; not its task history);
#   8. stops the simulator, also on failure or Ctrl-C.
#
# KEEP=1 stops after step 6 and leaves the simulator and the VMs up. SPEED=<n> runs the
# simulator n times faster than a real host (default 1).
# Exit status 0 only if every step held.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# -speed of the simulator: 1 is a real host's pace (clone ~2 s, guest address ~45 s after the
# start), so the demo takes about a minute and a quarter once built; SPEED=5 runs five times
# faster (CI runs it so).
SPEED="${SPEED:-1}"
KEEP="${KEEP:-}"
LISTEN="${LISTEN:-127.0.0.1:0}"
NAME_PREFIX="proxy-demo-"
# The binaries stay between runs: `go build` relinks only what changed.
BIN="${DEMO_BIN:-$ROOT/bin/demo}"

export CHECKPOINT_DISABLE=1
unset TF_LOG TF_LOG_PROVIDER TF_LOG_CORE TF_WORKSPACE TF_DATA_DIR || true

bold() { if [[ -t 1 ]]; then printf '\n\033[1m==> %s\033[0m\n' "$*"; else printf '\n==> %s\n' "$*"; fi; }
fail() { printf '\ndemo: FAILED: %s\n' "$*" >&2; exit 1; }
elapsed() { local s=$((SECONDS - $1)); printf '%dm%02ds' $((s / 60)) $((s % 60)); }

for tool in go terraform curl; do
	command -v "$tool" >/dev/null 2>&1 || fail "$tool is not on PATH"
done

START=$SECONDS
WORK="$(mktemp -d "${TMPDIR:-/tmp}/proxy-demo.XXXXXX")"
SIM_PID=""
KEPT=""

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [[ -n "$KEPT" ]]; then
		exit "$rc"
	fi
	if [[ -n "$SIM_PID" ]] && kill -0 "$SIM_PID" 2>/dev/null; then
		kill -TERM "$SIM_PID" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$SIM_PID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$SIM_PID" 2>/dev/null || true
		wait "$SIM_PID" 2>/dev/null || true
		echo "demo: simulator stopped"
	fi
	if [[ $rc -ne 0 ]]; then
		if [[ -s "$WORK/sim.log" ]]; then
			echo "demo: last simulator log lines:" >&2
			tail -n 20 "$WORK/sim.log" >&2 || true
		fi
		echo "demo: did not complete (exit $rc); the simulator and everything in it are gone" >&2
	fi
	rm -rf "$WORK"
	exit "$rc"
}
trap cleanup EXIT
trap 'echo; echo "demo: interrupted" >&2; exit 130' INT TERM

# 1. Build ------------------------------------------------------------------------------------
bold "Building the provider and the simulator"
mkdir -p "$BIN"
(cd "$ROOT" && go build -trimpath -o "$BIN/terraform-provider-proxy" .)
(cd "$ROOT" && go build -trimpath -o "$BIN/pvesim" ./internal/pvesim/cmd/pvesim)
echo "built into $BIN ($(elapsed $START))"

# 2. Simulator --------------------------------------------------------------------------------
bold "Starting the Proxmox simulator (-speed $SPEED; 1 is a real host's pace)"
"$BIN/pvesim" -listen "$LISTEN" -speed "$SPEED" >"$WORK/sim.json" 2>"$WORK/sim.log" &
SIM_PID=$!
for _ in $(seq 300); do
	[[ -s "$WORK/sim.json" ]] && break
	kill -0 "$SIM_PID" 2>/dev/null || fail "the simulator exited: $(cat "$WORK/sim.log")"
	sleep 0.1
done
[[ -s "$WORK/sim.json" ]] || fail "the simulator printed nothing in 30 s"
SIM_JSON="$(head -n 1 "$WORK/sim.json")"
json_field() { # json_field <key>: a string field of the simulator's line (no jq needed)
	sed -n 's/.*"'"$1"'"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' <<<"$SIM_JSON"
}
ENDPOINT="$(json_field endpoint)"
TOKEN="$(json_field api_token)"
CA_FILE="$(json_field ca_file)"
ISO_STORAGE="$(json_field iso_storage)"
# "nodes":["pve1","pve2"] -> pve1 pve2
read -r -a NODES <<<"$(sed -n 's/.*"nodes"[[:space:]]*:[[:space:]]*\[\([^]]*\)\].*/\1/p' <<<"$SIM_JSON" | tr -d '"' | tr ',' ' ')"
[[ -n "$ENDPOINT" && -n "$TOKEN" && -n "$CA_FILE" && -n "$ISO_STORAGE" && ${#NODES[@]} -gt 0 ]] \
	|| fail "unexpected simulator line: $SIM_JSON"
echo "simulator pid $SIM_PID at $ENDPOINT"

sim_get() { # sim_get <path>: GET on the simulator with its token
	curl -fsS --cacert "$CA_FILE" -H "Authorization: PVEAPIToken=$TOKEN" "$ENDPOINT$1"
}

# 3. Terraform CLI configuration: the built provider, nothing from a registry ------------------
cat >"$WORK/terraformrc" <<EOF
provider_installation {
  dev_overrides {
    "registry.terraform.io/proxy-operator/proxy" = "$BIN"
  }
  direct {}
}
EOF
export TF_CLI_CONFIG_FILE="$WORK/terraformrc"
export TF_IN_AUTOMATION=1 # no "run terraform init" hints: dev_overrides need no init

# The simulator's line has exactly the demo's variable names; Terraform loads it by itself.
mkdir -p "$WORK/demo" "$WORK/provider-example"
cp "$ROOT"/examples/demo/*.tf "$ROOT"/examples/demo/*.yaml "$WORK/demo/"
printf '%s\n' "$SIM_JSON" >"$WORK/demo/simulator.auto.tfvars.json"

# 4. examples/provider/provider.tf, pointed at the simulator ---------------------------------
bold "Checking examples/provider/provider.tf against the simulator"
cp "$ROOT/examples/provider/provider.tf" "$WORK/provider-example/"
cp "$WORK/demo/variables.tf" "$WORK/demo/simulator.auto.tfvars.json" "$WORK/provider-example/"
cat >"$WORK/provider-example/provider_override.tf" <<'EOF'
# Keeps every attribute of examples/provider/provider.tf but the cluster's address and identity.
provider "proxy" {
  endpoint       = var.endpoint
  api_token      = var.api_token
  api_token_file = null
  ca_file        = var.ca_file
  nodes          = var.nodes
  iso_storage    = var.iso_storage
  templates      = var.templates
}
EOF
cat >"$WORK/provider-example/health.tf" <<'EOF'
data "proxy_health" "this" {}

output "ready" {
  value = data.proxy_health.this.ready
}
EOF
terraform -chdir="$WORK/provider-example" apply -auto-approve -compact-warnings -var 'proxmox_nodes=[]' >"$WORK/provider-example.log" 2>&1 \
	|| { cat "$WORK/provider-example.log"; fail "examples/provider/provider.tf does not work against the simulator"; }
[[ "$(terraform -chdir="$WORK/provider-example" output -raw ready)" == "true" ]] \
	|| { cat "$WORK/provider-example.log"; fail "proxy_health is not ready with examples/provider/provider.tf"; }
echo "ok: the provider example configures and every node is ready"

# 5. Apply ------------------------------------------------------------------------------------
bold "terraform apply examples/demo (three proxy_vm gated on proxy_health)"
APPLY_START=$SECONDS
terraform -chdir="$WORK/demo" apply -auto-approve -compact-warnings
APPLY_TIME="$(elapsed $APPLY_START)"

# What the cluster holds, asked as an operator would: the VMs of every node
# (GET /nodes/{node}/qemu, read from the VM configs, no listing lag) and the ISO volumes of the
# seed storage (GET /nodes/{node}/storage/{storage}/content). Task history is not asked: it
# keeps naming the seeds it uploaded and deleted, as Proxmox's does.
cluster_objects() { # prints the VM list and the ISO list of every node, one JSON body a line
	local node
	for node in "${NODES[@]}"; do
		sim_get "/api2/json/nodes/$node/qemu" || fail "could not list the VMs of node $node"
		echo
		sim_get "/api2/json/nodes/$node/storage/$ISO_STORAGE/content?content=iso" \
			|| fail "could not list the ISOs of $ISO_STORAGE on node $node"
		echo
	done
}
# A control for the check after the destroy: the same query must see the demo's objects.
count_demo_objects() { # prints "<vms> <seeds> <traces>" of the demo in the cluster
	local objects vms seeds traces
	objects="$(cluster_objects)" || exit 1
	vms="$(grep -o "\"name\":\"$NAME_PREFIX[^\"]*\"" <<<"$objects" | sort -u | wc -l)"
	seeds="$(grep -o "\"volid\":\"[^\"]*:iso/$NAME_PREFIX[^\"]*-seed\.iso\"" <<<"$objects" | sort -u | wc -l)"
	# Anything else of a VM or a volume naming the demo (a renamed VM's tag, another ISO).
	traces="$(grep -o "$NAME_PREFIX" <<<"$objects" | wc -l)"
	echo "$((vms)) $((seeds)) $((traces))"
}
COUNTS="$(count_demo_objects)" || fail "could not ask the simulator what it holds"
read -r VMS SEEDS TRACES <<<"$COUNTS"
[[ $VMS -eq 3 && $SEEDS -eq 3 ]] || fail "the simulator holds $VMS demo VMs and $SEEDS seed ISOs, expected 3 and 3"
echo "simulator: $VMS VMs named ${NAME_PREFIX}*, $SEEDS seed ISOs"

# 6. Plan is empty ----------------------------------------------------------------------------
bold "terraform plan -detailed-exitcode (must be empty)"
set +e
terraform -chdir="$WORK/demo" plan -detailed-exitcode -compact-warnings
PLAN_RC=$?
set -e
case $PLAN_RC in
0) echo "ok: no changes after apply" ;;
2) fail "the plan after apply is not empty" ;;
*) fail "terraform plan failed (exit $PLAN_RC)" ;;
esac

if [[ -n "$KEEP" ]]; then
	KEPT=1
	cat <<EOF

Everything held. KEEP=1: the simulator (pid $SIM_PID) and the three VMs stay up.

  Simulator:  $ENDPOINT  (token and CA in $WORK/demo/simulator.auto.tfvars.json)
  Try it:     curl --cacert $CA_FILE -H 'Authorization: PVEAPIToken=$TOKEN' \\
                '$ENDPOINT/api2/json/cluster/resources?type=vm'
  Terraform:  export TF_CLI_CONFIG_FILE=$WORK/terraformrc
              terraform -chdir=$WORK/demo output
              terraform -chdir=$WORK/demo plan
  Clean up:   terraform -chdir=$WORK/demo destroy -auto-approve
              kill $SIM_PID && rm -rf $WORK
EOF
	exit 0
fi

# 7. Destroy, then ask the simulator ----------------------------------------------------------
bold "terraform destroy"
DESTROY_START=$SECONDS
terraform -chdir="$WORK/demo" destroy -auto-approve -compact-warnings
DESTROY_TIME="$(elapsed $DESTROY_START)"

bold "Checking on the simulator that nothing is left"
COUNTS="$(count_demo_objects)" || fail "could not ask the simulator what it holds"
read -r VMS SEEDS TRACES <<<"$COUNTS"
if [[ $VMS -eq 0 && $SEEDS -eq 0 && $TRACES -eq 0 ]]; then
	echo "ok: no VM named ${NAME_PREFIX}*, no ${NAME_PREFIX}*-seed.iso, no VM or ISO naming ${NAME_PREFIX}"
else
	cluster_objects >&2
	fail "the cluster still holds $VMS demo VMs, $SEEDS seed ISOs and $TRACES mentions of ${NAME_PREFIX} in its VMs and ISOs (above)"
fi

bold "Demo passed in $(elapsed $START): apply $APPLY_TIME, plan empty, destroy $DESTROY_TIME, nothing left"
