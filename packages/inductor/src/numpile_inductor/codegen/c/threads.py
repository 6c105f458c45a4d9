"""How many OpenMP threads a call's kernels use: OpenMP's maximum, less the cores other tasks
are busy on now.

An OpenMP region ends when its slowest thread does. On a machine whose cores other processes
keep busy, a region of two threads waits for the one the scheduler runs last, often a whole
time slice: a kernel that takes 0.3 ms on one thread then takes 3 ms on two. NumPy's own
loops are single-threaded and never wait so; a compiled program must not be slower than
them. So unless the graph was compiled with `threads=N` (`cpp.threads`), each call runs its
kernels on at most `omp_get_num_procs()` minus the other runnable tasks (Linux's
`/proc/loadavg`, which counts this one; sampled at most every `SAMPLE_MS` milliseconds, a few
microseconds per sample, with the count of cores: `omp_get_num_procs()` is a system call,
which a call of a small graph must not pay each time), never more than OpenMP's own maximum
(`OMP_NUM_THREADS`) and at least one. A process confined to fewer cores than the machine has
(a cpuset) keeps OpenMP's maximum: the machine-wide count says nothing about its own cores.

Why not libgomp's own `OMP_DYNAMIC=true`, which also lowers a team's size by the load
(`gomp_dynamic_max_threads` in libgomp's `config/linux/proc.c`):

- it subtracts the *15-minute* load average (`getloadavg`'s third value), so it follows a
  neighbour's burst minutes late: two threads while the burst runs (the straggler wait
  above), one for minutes after the cores are free again. This rule reads the runnable
  tasks now (the fourth field of `/proc/loadavg`), refreshed every `SAMPLE_MS`;
- it asks again at every region's start: `sched_getaffinity` and `getloadavg` (open, read
  and close of `/proc/loadavg`), about a microsecond per region even when the answer is
  one thread; this rule reads the file at most once per `SAMPLE_MS`;
- it is a process-wide setting of the user's environment, which a library should not
  change for them.

Under a steady overload the two agree (one thread), and only the cost per region differs;
docs/status.md (issue 23, branch leftover29) has the measurement.

    >>> "np_idle_threads" in THREAD_HELPERS
    True
"""

from __future__ import annotations

__all__ = ["SAMPLE_MS", "THREAD_HELPERS"]

# NOTE: how long one reading of the machine's runnable tasks serves (milliseconds): long
# enough that the read costs nothing per call, short against a busy neighbour's bursts.
SAMPLE_MS = 50

THREAD_HELPERS = f"""
/* OpenMP threads by idle cores (codegen/c/threads.py). */
#if defined(_OPENMP) && defined(__linux__)
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
/* The runnable tasks other than this one in /proc/loadavg's text ("0.6 1.0 1.7 3/450 99"). */
static int np_busy_tasks(const char *text)
{{
    const char *slash = strchr(text, '/');
    const char *digits = slash;
    while (digits != NULL && digits > text && digits[-1] >= '0' && digits[-1] <= '9') {{
        digits--;
    }}
    const int running = digits != NULL && digits < slash ? atoi(digits) : 1;
    return running > 1 ? running - 1 : 0;
}}
static volatile int g_busy_tasks = 0;
static volatile int g_procs = 1;
static volatile int64_t g_busy_at = 0;
static int np_idle_threads(int max)
{{
    static int whole_machine = -1;
    if (whole_machine < 0) {{
        whole_machine = omp_get_num_procs() >= (int)sysconf(_SC_NPROCESSORS_ONLN);
    }}
    if (!whole_machine || max <= 1) {{
        return max;
    }}
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    const int64_t ns = (int64_t)now.tv_sec * 1000000000 + (int64_t)now.tv_nsec;
    if (g_busy_at == 0 || ns - g_busy_at > (int64_t){SAMPLE_MS} * 1000000) {{
        g_busy_at = ns;
        /* omp_get_num_procs() asks the kernel (sched_getaffinity): once per sample. */
        g_procs = omp_get_num_procs();
        char text[160];
        int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
        ssize_t got = fd < 0 ? -1 : read(fd, text, sizeof text - 1);
        if (fd >= 0) {{ close(fd); }}
        if (got > 0) {{
            text[got] = 0;
            g_busy_tasks = np_busy_tasks(text);
        }}
    }}
    const int idle = g_procs - g_busy_tasks;
    return idle < 1 ? 1 : idle < max ? idle : max;
}}
#elif defined(_OPENMP)
static int np_idle_threads(int max) {{ return max; }}
#endif
"""
