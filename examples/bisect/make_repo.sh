#!/bin/sh
# A git repository of 16 commits for `fvp-harness bisect` on the simulator (docs/bisect.md).
#
# Each commit's driver.txt says how the simulated runner drives the NPU (scenarios/bisect/bisect_sim.yaml
# builds the runner with `sim runner --driver "$(cat {source}/driver.txt)"`): `reuse` is the fast
# level, `per-inference` the slow one; jitter.txt is the relative noise of the runner's CPU time
# (`sim runner --jitter`). The regression lands in commit 11 ("ethos-u: re-create the driver per
# inference"); commit 7 does not build (driver.txt names no driver) and commit 9 is noisy (jitter
# 0.3 instead of 0.01). Usage: make_repo.sh FOLDER (made anew; refused if it exists).
set -eu
repo=${1:?usage: make_repo.sh FOLDER}
if [ -e "$repo" ]; then echo "make_repo.sh: $repo exists; remove it first" >&2; exit 2; fi
mkdir -p "$repo"
git -C "$repo" init -q -b main
commit() {
    GIT_AUTHOR_DATE="2026-11-$(printf %02d "$(( $1 + 1 ))")T12:00:00Z" \
    GIT_COMMITTER_DATE="2026-11-$(printf %02d "$(( $1 + 1 ))")T12:00:00Z" \
    git -C "$repo" -c user.name="Dev $1" -c user.email="dev$1@example.com" commit -q -a -m "$2"
}
for i in $(seq 0 15); do
    driver=reuse
    [ "$i" -ge 11 ] && driver=per-inference
    [ "$i" -eq 7 ] && driver=no-such-driver
    jitter=0.01
    [ "$i" -eq 9 ] && jitter=0.3
    printf '%s\n' "$driver" > "$repo/driver.txt"
    printf '%s\n' "$jitter" > "$repo/jitter.txt"
    printf 'change %s\n' "$i" >> "$repo/CHANGES"
    git -C "$repo" add driver.txt jitter.txt CHANGES
    case $i in
        0) commit 0 "runtime: initial import"; git -C "$repo" tag v1 ;;
        7) commit 7 "build: rename the driver option (breaks the build)" ;;
        9) commit 9 "runtime: poll the NPU from a timer (noisy)" ;;
        11) commit 11 "ethos-u: re-create the driver per inference" ;;
        *) commit "$i" "runtime: change $i" ;;
    esac
done
echo "$repo: 16 commits, v1 = the first, main = the last"
