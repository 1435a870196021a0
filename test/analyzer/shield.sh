# shield.sh: sourced by the tests that record a timed workload (real_cause.sh,
# gpu_modes.sh). shield CMD...: run CMD in a session of its own at a higher
# CPU weight (autogroup and task nice -10; as root, else as is), so that the
# box's other sessions (parallel builds, other tests) delay it less.
shield() {
    setsid -w sh -c 'echo -10 >/proc/self/autogroup 2>/dev/null; exec nice -n -10 "$@"' sh "$@"
}
