#!/bin/sh
# Fake terraform: records the environment it was given (NUL-separated) in its working directory.
env -0 > "$PWD/env.dump"
echo "fake terraform $*"
