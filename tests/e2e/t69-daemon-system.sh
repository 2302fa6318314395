#!/usr/bin/env bash
# System mode (one daemon for the node; SO_PEERCRED says who each client
# is): the socket is open to all, each user's jobs run as that user, and a
# user sees, reads and cancels only their own jobs; root sees all.  Needs
# root and setpriv (to be user nobody); skipped otherwise.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/kmuxd-lib.sh"

# nobody must reach the socket's directory, kmux (a wrapper in $TMP under
# the sanitizer build) and the job's directory.
chmod 755 "$TMP" "$TMP/run"
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null 2>&1 ||
   ! setpriv --reuid=65534 --regid=65534 --clear-groups "$KMUX" --version >/dev/null 2>&1; then
	echo "  skip $T_NAME: needs root, setpriv, and a kmux that user nobody can run"
	finish
fi
export KMUX_SOCKET=$TMP/run/sys.sock
as_nobody() { (cd / && setpriv --reuid=65534 --regid=65534 --clear-groups "$@"); }

expect_rc 0 "a system daemon starts" start_daemon --system --state-dir "$TMP/sysstate"
check "its socket is open to every user (0666)" [ "$(stat -c %a "$KMUX_SOCKET")" = 666 ]
check "its state is not (0700)" [ "$(stat -c %a "$TMP/sysstate")" = 700 ]
r=$("$KMUX" submit -m 10G -- sleep 30)
n=$(as_nobody "$KMUX" submit -m 1G -- sh -c 'id -u; sleep 0.2')
check "nobody can submit ($n)" [ -n "$n" ]
expect_rc 0 "nobody waits for their job" as_nobody "$KMUX" wait "$n"
check "  ... it ran as nobody (uid 65534)" grep -qx 65534 <(as_nobody "$KMUX" logs "$n")
as_nobody "$KMUX" ps --all --json >"$TMP/ps-nobody"
check "nobody's ps lists their job only" python3 -c '
import json, sys
ids = [j["id"] for j in json.load(open(sys.argv[1]))]
sys.exit(0 if ids == [int(sys.argv[2])] else 1)' "$TMP/ps-nobody" "$n"
check "root's ps lists both" [ "$("$KMUX" ps --all | sed 1d | wc -l)" = 2 ]
expect_rc 1 "nobody cannot cancel root's job" as_nobody "$KMUX" cancel "$r"
check "  ... told it belongs to another user" err_has "belongs to another user"
expect_rc 1 "nobody cannot read root's job's log" as_nobody "$KMUX" logs "$r"
expect_rc 125 "nobody cannot wait on it either" as_nobody "$KMUX" wait "$r"
check "root's job still runs" [ "$(jq_job "$r" 'j["state"]')" = running ]
expect_rc 0 "root can cancel it" "$KMUX" cancel "$r"
expect_rc 143 "  ... it ends by SIGTERM" "$KMUX" wait "$r"

# A `kmux run` of nobody's names its command's pid (STARTED), which kmuxd,
# root, then signals on nobody's behalf; a command that became root since
# (a setuid program) is one nobody cannot signal, and neither may nobody's
# cancel: kmuxd signals as the job's user.
cat >"$TMP/suid.c" <<'C'
#include <unistd.h>
int main(void)
{
	if (setresuid(0, 0, 0))
		return 1;
	for (int i = 0; i < 300; i++)
		usleep(100000);
	return 0;
}
C
cc -o "$TMP/suid" "$TMP/suid.c" && chmod 4755 "$TMP/suid"
as_nobody "$TMP/suid" &
sp=$!
became_root() { [ "$(awk '/^Uid:/ { print $2 $3 $4 }' "/proc/$sp/status" 2>/dev/null)" = 000 ]; }
if ! wait_for 20 became_root; then
	kill "$sp" 2>/dev/null
	echo "  skip: the rest of $T_NAME: setuid programs do not run here (nosuid?)"
	finish
fi
kill -9 "$sp"
as_nobody "$KMUX" run -m 1G -n suid -- sh -c "sleep 0.5; exec '$TMP/suid'" >/dev/null 2>&1 &
rp=$!
suid_job() { jq_job "$(as_nobody "$KMUX" ps --json | python3 -c 'import json, sys
print([j["id"] for j in json.load(sys.stdin) if j["name"] == "suid"][0])' 2>/dev/null)" 'j["pid"]'; }
suid_root() {
	sp=$(suid_job) && [ "$sp" != None ] &&
	[ "$(awk '/^Uid:/ { print $2 $3 $4 }' "/proc/$sp/status" 2>/dev/null)" = 000 ]
}
check "nobody's kmux run: its command's pid is known, and it became root" wait_for 50 suid_root
sj=$(as_nobody "$KMUX" ps --json | python3 -c 'import json, sys
print([j["id"] for j in json.load(sys.stdin) if j["name"] == "suid"][0])')
expect_rc 1 "nobody's cancel -s KILL of it is refused" as_nobody "$KMUX" cancel -s KILL "$sj"
check "  ... not permitted" err_has "Operation not permitted"
check "  ... the root process still runs" kill -0 "$sp"
expect_rc 0 "root's cancel -s KILL of it works" "$KMUX" cancel -s KILL "$sj"
wait "$rp"
check "  ... kmux run exits 137" [ $? -eq 137 ]
finish
