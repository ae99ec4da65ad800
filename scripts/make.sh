#!/bin/sh
# make, exiting with the harness's own exit code: GNU make exits 2 for every failed recipe, so
# the Makefile writes a failing harness command's code (112, 113, 114, ...) to EXIT_CODE_FILE and
# this returns it. Usage: sh scripts/make.sh [make options] TARGET [VAR=value ...]
#   sh scripts/make.sh eval SUBMISSION=my.py MODE=test; echo $?
code_file=$(mktemp) || exit 2
trap 'rm -f "$code_file"' EXIT
make "$@" EXIT_CODE_FILE="$code_file"
status=$?
if [ "$status" -ne 0 ] && [ -s "$code_file" ]; then
    status=$(cat "$code_file")
fi
exit "$status"
