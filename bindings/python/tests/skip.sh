#!/bin/sh
# Reports a test as skipped to CTest (exit 77) with the reason given.
echo "SKIPPED: $*"
exit 77
