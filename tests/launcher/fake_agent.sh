#!/bin/sh
# Stand-in for ssh in the launcher tests: "fake_agent.sh HOST COMMAND..." runs COMMAND on this
# machine the way ssh would run it on HOST: the words joined and given to a shell, in a clean
# environment (so only what mpirun forwards reaches the ranks), with FAKE_HOST=HOST so a rank can
# tell where it "is". Like a chatty login script, it prints a line on stdout first, which mpirun
# must pass to stderr instead of mistaking it for the proxy protocol.
host="$1"
shift
echo "fake_agent: welcome to $host"
exec env -i PATH="$PATH" HOME="${HOME:-/}" FAKE_HOST="$host" sh -c "$*"
