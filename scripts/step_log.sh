# Sourced by the GPU scripts: one way to run and log a step. Set before sourcing: summary (the
# summary file every step's head and tail go to), STEP_LOGS (the folder of each step's full log);
# optionally AFTER_STEP (a command run after each step) and TAIL (lines of each log shown).
log() { echo "$*" | tee -a "$summary"; }
run_step() {  # name, command...: log the command, its time and exit status; keep its output
  local name=$1; shift
  log "== $name: $* ($(date -u +%FT%TZ))"
  local start=$SECONDS
  "$@" > "$STEP_LOGS/$name.log" 2>&1
  local rc=$?
  tail -n "${TAIL:-40}" "$STEP_LOGS/$name.log" | tee -a "$summary"
  log "== $name: exit $rc after $((SECONDS - start)) s"
  if [ -n "${AFTER_STEP:-}" ]; then $AFTER_STEP; fi
}
