#!/usr/bin/env bash
# Builds a measurement prototype (bench/prototypes/<name>.patch) in a new worktree of HEAD, so that
# bench/cpu.ts can run it beside today's build: CPU_RECEIVERS=...,ingress@<dir>,serve@<dir>.
# Prototypes answer "what would this design cost?" and are never merged as they are.
set -euo pipefail
cd "$(dirname "$0")/.."
names=$(ls bench/prototypes | sed -n 's/\.patch$//p' | tr '\n' ' ')
if [ $# -ne 2 ]; then
  echo "usage: bash bench/prototype.sh <name> <dir>    names: $names" >&2
  echo "example: bash bench/prototype.sh intake /tmp/postroom-intake" >&2
  exit 2
fi
name=$1
dir=$2
patch="$PWD/bench/prototypes/$name.patch"
if [ ! -f "$patch" ]; then
  echo "no prototype named '$name' (bench/prototypes/$name.patch); names: $names" >&2
  exit 2
fi
if [ -e "$dir" ]; then
  echo "$dir already exists: pick another folder, or remove it first (git worktree remove --force $dir)" >&2
  exit 2
fi
if [ ! -d node_modules ]; then
  echo "node_modules is missing: run npm ci first" >&2
  exit 2
fi
git worktree add --quiet --detach "$dir" HEAD
git -C "$dir" apply "$patch"
ln -s "$PWD/node_modules" "$dir/node_modules"
(cd "$dir" && npx tsc -p tsconfig.build.json)
echo "built prototype '$name' at $dir (HEAD $(git rev-parse --short HEAD) + bench/prototypes/$name.patch)"
echo "measure: CPU_SLICES=5 CPU_SECONDS=8 CPU_RECEIVERS=gc_pk,ingress,ingress@$dir,serve,serve@$dir npx tsx bench/cpu.ts"
echo "then remove it: git worktree remove --force $dir"
