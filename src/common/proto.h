/*
 * proto.h - the wire protocol between kmux (the CLI), the preload's client
 * and kmuxd.
 *
 * Owns: the frame layout, the message numbers, every payload layout, and
 * the codec between bytes and struct proto_msg.  No sockets here: the codec
 * works on byte buffers, so the daemon's event loop, the CLI and the fuzzer
 * all drive the same code.  libc only (the preload will link it).
 *
 * Frame.  A 16-byte header followed by `length` payload bytes, all integers
 * little endian, no padding:
 *
 *	offset 0  u32 magic     PROTO_MAGIC, the bytes "KMUX"
 *	offset 4  u16 version   PROTO_VERSION; any other value is refused
 *	offset 6  u16 type      enum proto_type
 *	offset 8  u32 length    payload bytes; header + payload <= 1 MiB
 *	offset 12 u32 seq       chosen by the requester; a reply (and every
 *	                        message caused by a request, e.g. EXITED after
 *	                        WAIT) carries the seq of its request
 *
 * Payload.  A fixed part (one packed struct per type, below, with its size
 * asserted) and then, in a fixed order, variable fields of three kinds:
 *
 *	str   u32 n, then n bytes: n >= 1, byte n-1 is NUL, no other NUL.
 *	      So a decoded string is a C string in place, and "" is n = 1.
 *	strv  u32 count, u32 bytes, then `bytes` bytes holding `count` C
 *	      strings back to back (like execve's argument block); count = 0
 *	      iff bytes = 0.
 *	list  records counted in the fixed part (ADMIT's GPUs, JOB_LIST's
 *	      jobs, GPU_LIST's GPUs).
 *
 * Fixed structs plus length-prefixed strings rather than TLV: every message
 * has exactly one encoding (reserved fields and unknown flag bits must be
 * zero, nothing may follow the last field), so "decode, encode again, get
 * the same bytes" holds for every accepted frame, which is what the fuzzer
 * checks.  Changing a layout means bumping PROTO_VERSION, and the version is
 * checked on every frame, as tmux does: a peer of another version is
 * answered with ERROR (EPROTONOSUPPORT) and dropped.
 *
 * Message numbers come in blocks: 1xx from a client (CLI or preload) to the
 * daemon, 2xx from the daemon to a client.
 *
 * Decoding is total: proto_decode() accepts any bytes and either fills a
 * validated struct proto_msg or returns an error; it never reads outside
 * [buf, buf + len) and never allocates.  A decoded message points into the
 * buffer it was decoded from (strings, string blocks, job records) and is
 * valid only as long as that buffer is.
 */
#ifndef KMUX_PROTO_H
#define KMUX_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROTO_MAGIC 0x58554d4bu		/* the bytes "KMUX" read as u32 LE */
#define PROTO_VERSION 13
#define PROTO_HDR_SIZE 16
#define PROTO_MAX_MSG (1u << 20)	/* header included */
#define PROTO_MAX_PAYLOAD (PROTO_MAX_MSG - PROTO_HDR_SIZE)

/* GPU indices are < 64: job records carry the GPUs as a 64-bit mask. */
#define PROTO_MAX_GPUS 64
/* Lengths including the NUL. */
#define PROTO_MAX_NAME 256		/* job names, client idents */
#define PROTO_MAX_PATH 4096		/* cwd, like PATH_MAX */
#define PROTO_MAX_ERRMSG 1024
/* Exit codes are 0..255; this one says "not known" (the daemon restarted
 * and the process was gone, or it was never started). */
#define PROTO_EXIT_UNKNOWN (-1)
#define PROTO_MAX_SIGNAL 64
/*
 * The signals a RUN client (`kmux run`) passes on to its command, and so
 * the ones kmuxd may send that client to cancel a job whose own process it
 * does not know (job-request.c).  For <signal.h> users.
 */
#define PROTO_RUN_PASSED_SIGNALS \
	SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2

enum proto_type {
	/* client -> daemon */
	PROTO_HELLO = 100,	/* first message on every connection */
	PROTO_SUBMIT = 101,	/* queue a job; the daemon starts it, output to a log */
	PROTO_RUN = 102,	/* queue a job; the client starts it after ADMIT */
	PROTO_REGISTER = 103,	/* preload: this process wants a GPU */
	PROTO_ALLOC_UPDATE = 104, /* preload: bytes resident / peak / wanted */
	PROTO_PS = 105,		/* list jobs -> JOB_LIST */
	PROTO_WAIT = 106,	/* -> EXITED when the job ends */
	PROTO_CANCEL = 107,	/* -> OK or ERROR */
	PROTO_LOGS = 108,	/* -> LOG_DATA ... (flag EOF on the last) */
	PROTO_TOP = 109,	/* -> GPU_LIST then JOB_LIST */
	PROTO_FINISHED = 110,	/* client of RUN: the command exited */
	PROTO_REGION_ENTER = 111, /* preload: this process wants its GPU alone
				   * -> REGION_GRANTED (after a FIFO wait) */
	PROTO_REGION_LEAVE = 112, /* preload: the region is over -> OK */
	PROTO_DRAINED = 113,	/* preload: DRAIN done (its streams are idle) */
	PROTO_ATTACH = 114,	/* client of RUN, back after its daemon died
				 * (v11): this queued job is mine again ->
				 * OK, then QUEUED, ADMIT or EXITED as after
				 * RUN; EXITED at once if it has ended */
	PROTO_STARTED = 115,	/* client of RUN, after ADMIT (v12): the
				 * command runs as this pid -> OK */

	/* daemon -> client */
	PROTO_OK = 200,
	PROTO_ERROR = 201,	/* errno + message */
	PROTO_ADMIT = 202,	/* go: these GPUs, this memory quota */
	PROTO_JOB_LIST = 203,
	PROTO_EXITED = 204,
	PROTO_GPU_LIST = 205,
	PROTO_LOG_DATA = 206,
	PROTO_QUEUED = 207,	/* accepted, waiting: position in the queue */
	PROTO_DRAIN = 208,	/* to a preload: finish your GPU work, answer
				 * DRAINED; the gate stays closed meanwhile */
	PROTO_REGION_GRANTED = 209, /* the region is yours */
	PROTO_MEM_PRESSURE = 210, /* to a preload: your GPU is short of memory,
				   * give up this many resident bytes (v4) */
};

/* Job states, shared by the wire and the daemon's database. */
enum proto_job_state {
	PROTO_JOB_QUEUED = 1,
	PROTO_JOB_RUNNING = 2,
	PROTO_JOB_EXITED = 3,	/* exit_code / signal, or PROTO_EXIT_UNKNOWN */
	PROTO_JOB_CANCELLED = 4,
	PROTO_JOB_FAILED = 5,	/* never started: cannot fit, exec failed */
};
#define PROTO_JOB_STATE_MIN PROTO_JOB_QUEUED
#define PROTO_JOB_STATE_MAX PROTO_JOB_FAILED

/* HELLO roles. */
#define PROTO_ROLE_CLI 1
#define PROTO_ROLE_PRELOAD 2

/*
 * Flags.  Each *_F_MASK holds every bit defined; a frame with any other
 * bit set is refused, so a new flag needs a new PROTO_VERSION.
 */

/* SUBMIT / RUN flags. */
#define PROTO_JOB_F_EXCLUSIVE 0x1u	/* wants its GPUs alone (benchmarks) */
#define PROTO_JOB_F_MASK 0x1u

/* PS flags. */
#define PROTO_PS_F_ALL_USERS 0x1u	/* system mode, root only */
#define PROTO_PS_F_MASK 0x1u

/* LOGS flags. */
#define PROTO_LOGS_F_FOLLOW 0x1u	/* keep sending until the job ends */
#define PROTO_LOGS_F_MASK 0x1u

/* REGISTER flags. */
#define PROTO_REG_F_RUNNING 0x1u	/* re-registration of a process already
					 * admitted (the daemon restarted): gpus
					 * and mem are what it holds */
#define PROTO_REG_F_MASK 0x1u

/* ALLOC_UPDATE flags (v4). */
#define PROTO_ALLOC_F_EVICT 0x1u	/* the memory manager evicts (--memory=
					 * evict): it acts on MEM_PRESSURE; with
					 * want, it thrashes and asks for a
					 * larger budget, granted now (perhaps
					 * in part) or refused now, never
					 * waiting (v4 preloads never sent want
					 * with this flag) */
#define PROTO_ALLOC_F_SHRUNK 0x2u	/* v7, with EVICT and want: the answer
					 * to MEM_PRESSURE with PROTO_PRESSURE_
					 * F_BUDGET: want is the new, lower
					 * budget (kmuxd lowers the commitment;
					 * no reply) */
#define PROTO_ALLOC_F_SUSPEND 0x4u	/* v8, with EVICT and want: the task
					 * cannot get room, evicted all it could
					 * (resident is what it still holds) and
					 * waits for want; kmuxd lowers its
					 * commitment to resident and answers
					 * ADMIT once it can commit want (or,
					 * past --grow-wait or when all wait,
					 * the budget it had: quota < want) */
#define PROTO_ALLOC_F_MASK 0x7u

/* Job record flags (v8; the record's former reserved word). */
#define PROTO_JOBREC_F_SUSPENDED 0x1u	/* running, suspended: waits for
					 * room for its working set */
#define PROTO_JOBREC_F_WAIT_BOUND 0x2u	/* v9, queued or running: waits for
					 * the GPU too often to share one
					 * with another such job
					 * (kmux daemon --slice-waits) */
#define PROTO_JOBREC_F_MASK 0x3u

/*
 * Why a queued job is held (the job record's held, v10): it cannot run on
 * the node as it is now, after kmuxd restarted with fewer GPUs, smaller
 * ones or none.  It stays queued, admitted by no one, and runs once a
 * kmuxd with enough starts; submissions that ask for as much are refused.
 */
enum proto_held {
	PROTO_HELD_NONE = 0,
	PROTO_HELD_GPUS = 1,	/* more GPUs than the node has */
	PROTO_HELD_MEM = 2,	/* more memory per GPU than any can give */
	PROTO_HELD_NO_GPUS = 3,	/* no GPUs at all (NVML could not be
				 * loaded, or sees none) */
};
#define PROTO_HELD_MAX PROTO_HELD_NO_GPUS

/* MEM_PRESSURE flags (v7). */
#define PROTO_PRESSURE_F_BUDGET 0x1u	/* give up budget (a queued task is
					 * kept out by commitments), not only
					 * resident bytes */
#define PROTO_PRESSURE_F_MASK 0x1u

/* LOG_DATA flags. */
#define PROTO_LOG_F_EOF 0x1u		/* no more data will follow */
#define PROTO_LOG_F_MASK 0x1u

/* ------------------------------------------------------------------------
 * Wire layouts of the fixed parts.  Only proto.c reads or writes these; they
 * are here so that the layout is written down once, with its size checked.
 */
#define PROTO_PACKED __attribute__((packed))

struct proto_wire_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t length;
	uint32_t seq;
} PROTO_PACKED;

struct proto_wire_hello {		/* + str ident */
	uint16_t role;
	uint16_t reserved;
	uint32_t pid;
} PROTO_PACKED;

struct proto_wire_job_req {		/* + str name, str cwd, strv argv, strv env */
	uint32_t flags;
	uint32_t ngpus;
	uint64_t mem;			/* bytes per GPU, 0 = not declared */
	int32_t prio;
	uint32_t reserved;
} PROTO_PACKED;

struct proto_wire_register {		/* + str name, strv argv */
	uint64_t job;
	uint64_t pid_start;
	uint64_t mem;
	uint64_t gpus;
	uint32_t pid;
	uint32_t flags;
	uint32_t ngpus;
	uint32_t reserved;
} PROTO_PACKED;

struct proto_wire_alloc_update {
	uint64_t job;
	uint32_t pid;
	uint32_t gpu;
	uint64_t resident;
	uint64_t peak;
	uint64_t want;
	uint64_t kernels;
	/* v4: the memory manager's accounting (0 without one). */
	uint64_t evicted;
	uint64_t reserved;
	uint64_t evicts;
	uint64_t restores;
	uint32_t flags;
	uint32_t reserved2;
	/* v6: the whole run's thrash verdict. */
	uint64_t thrash_ws;
	/* v9: host waits for the GPU so far. */
	uint64_t waits;
} PROTO_PACKED;

struct proto_wire_ps {
	uint32_t flags;
	uint32_t states;		/* bit (1 << state); 0 = all */
} PROTO_PACKED;

struct proto_wire_job_ref {		/* WAIT, ATTACH */
	uint64_t job;
} PROTO_PACKED;

struct proto_wire_cancel {
	uint64_t job;
	int32_t signal;
	uint32_t reserved;
} PROTO_PACKED;

struct proto_wire_logs {
	uint64_t job;
	uint64_t offset;
	uint32_t flags;
	uint32_t reserved;
} PROTO_PACKED;

struct proto_wire_top {
	uint32_t flags;
	uint32_t reserved;
} PROTO_PACKED;

struct proto_wire_finished {
	uint64_t job;
	uint32_t pid;
	int32_t exit_code;
	int32_t signal;
	uint32_t flags;			/* v13; before, 0 */
} PROTO_PACKED;

struct proto_wire_started {
	uint64_t job;
	uint32_t pid;
	uint32_t reserved;
} PROTO_PACKED;

struct proto_wire_ok {
	uint64_t id;
} PROTO_PACKED;

struct proto_wire_error {		/* + str message */
	int32_t err;
	uint32_t reserved;
} PROTO_PACKED;

struct proto_wire_admit {	/* + ngpus x u32 gpu index, str mps_pipe,
				 * str mps_log (v5) */
	uint64_t job;
	uint64_t quota;
	uint32_t ngpus;
	uint32_t reserved;
} PROTO_PACKED;

struct proto_wire_count {		/* JOB_LIST, GPU_LIST: + count records;
					 * GPU_LIST then str note (v10) */
	uint32_t count;
	uint32_t reserved;
} PROTO_PACKED;

struct proto_wire_job_rec {		/* + str name, str cmd */
	uint64_t id;
	uint64_t gpus;			/* mask of GPU indices */
	uint64_t mem_request;
	uint64_t mem_peak;
	uint64_t submit_us;
	uint64_t start_us;
	uint64_t end_us;
	uint32_t uid;
	uint32_t pid;
	uint32_t state;
	int32_t exit_code;
	int32_t signal;
	uint32_t ngpus;
	uint64_t mem_quota;
	uint64_t mem_used;
	uint32_t kernel_rate;
	uint32_t flags;			/* v8: PROTO_JOBREC_F_*; was reserved */
	/* v4 */
	uint64_t mem_evicted;
	uint64_t mem_reserved;
	uint64_t evicts;
	uint64_t restores;
	/* v9 */
	uint32_t wait_rate;
	uint32_t held;			/* v10: enum proto_held; was
					 * reserved */
} PROTO_PACKED;

struct proto_wire_exited {
	uint64_t job;
	uint32_t state;
	int32_t exit_code;
	int32_t signal;
	uint32_t reserved;
} PROTO_PACKED;

struct proto_wire_gpu_rec {
	uint32_t index;
	uint32_t ntasks;
	uint64_t mem_total;
	uint64_t mem_committed;
	uint64_t mem_used;
	uint32_t util_pm;
	uint32_t busy_pm;
} PROTO_PACKED;

struct proto_wire_log_data {		/* + length bytes */
	uint64_t job;
	uint64_t offset;
	uint32_t flags;
	uint32_t length;
} PROTO_PACKED;

struct proto_wire_queued {
	uint64_t job;
	uint32_t position;
	uint32_t reserved;
} PROTO_PACKED;

struct proto_wire_region_enter {
	uint64_t job;
	uint32_t pid;
	uint32_t gpu;
	uint32_t flags;
	uint32_t reserved;
} PROTO_PACKED;

struct proto_wire_region_leave {
	uint32_t pid;
	uint32_t reserved;
} PROTO_PACKED;

struct proto_wire_drained {
	uint64_t token;
	uint32_t pid;
	uint32_t reserved;
} PROTO_PACKED;

struct proto_wire_drain {
	uint64_t token;
	uint32_t gpu;
	uint32_t reserved;
} PROTO_PACKED;

struct proto_wire_region_granted {
	uint64_t region;
	uint64_t waited_us;
	uint32_t gpu;
	uint32_t frozen;
} PROTO_PACKED;

struct proto_wire_mem_pressure {
	uint64_t give;
	uint32_t gpu;
	uint32_t flags;			/* v7; was reserved (0) */
} PROTO_PACKED;

_Static_assert(sizeof(struct proto_wire_hdr) == PROTO_HDR_SIZE, "hdr");
_Static_assert(sizeof(struct proto_wire_region_enter) == 24, "region_enter");
_Static_assert(sizeof(struct proto_wire_region_leave) == 8, "region_leave");
_Static_assert(sizeof(struct proto_wire_drained) == 16, "drained");
_Static_assert(sizeof(struct proto_wire_drain) == 16, "drain");
_Static_assert(sizeof(struct proto_wire_region_granted) == 24, "granted");
_Static_assert(sizeof(struct proto_wire_mem_pressure) == 16, "mem_pressure");
_Static_assert(sizeof(struct proto_wire_hello) == 8, "hello");
_Static_assert(sizeof(struct proto_wire_job_req) == 24, "job_req");
_Static_assert(sizeof(struct proto_wire_register) == 48, "register");
_Static_assert(sizeof(struct proto_wire_alloc_update) == 104, "alloc_update");
_Static_assert(sizeof(struct proto_wire_ps) == 8, "ps");
_Static_assert(sizeof(struct proto_wire_job_ref) == 8, "job_ref");
_Static_assert(sizeof(struct proto_wire_cancel) == 16, "cancel");
_Static_assert(sizeof(struct proto_wire_logs) == 24, "logs");
_Static_assert(sizeof(struct proto_wire_top) == 8, "top");
_Static_assert(sizeof(struct proto_wire_finished) == 24, "finished");
_Static_assert(sizeof(struct proto_wire_started) == 16, "started");
_Static_assert(sizeof(struct proto_wire_ok) == 8, "ok");
_Static_assert(sizeof(struct proto_wire_error) == 8, "error");
_Static_assert(sizeof(struct proto_wire_admit) == 24, "admit");
_Static_assert(sizeof(struct proto_wire_count) == 8, "count");
_Static_assert(sizeof(struct proto_wire_job_rec) == 144, "job_rec");
_Static_assert(sizeof(struct proto_wire_exited) == 24, "exited");
_Static_assert(sizeof(struct proto_wire_gpu_rec) == 40, "gpu_rec");
_Static_assert(sizeof(struct proto_wire_log_data) == 24, "log_data");
_Static_assert(sizeof(struct proto_wire_queued) == 16, "queued");

/* ------------------------------------------------------------------------
 * Messages in host form.  The same structs are filled by proto_decode() and
 * read by the encoders, so a decoded message can be encoded again as is.
 * Strings: NULL is encoded as "" and decodes as a pointer into the buffer.
 */

/*
 * A string list.  To encode, give either vec (count pointers) or block
 * (count strings back to back in `bytes` bytes); decoding fills block and
 * leaves vec NULL.  Walk it with proto_strv_next() either way.
 */
struct proto_strv {
	uint32_t count;
	const char *const *vec;
	const char *block;
	uint32_t bytes;
};

struct proto_hello {
	uint16_t role;			/* PROTO_ROLE_* */
	uint32_t pid;
	const char *ident;		/* "kmux 0.1", for logs */
};

/* SUBMIT and RUN. */
struct proto_job_req {
	uint32_t flags;			/* PROTO_JOB_F_* */
	uint32_t ngpus;			/* 1 .. PROTO_MAX_GPUS */
	uint64_t mem;			/* bytes per GPU; 0: learn or guess */
	int32_t prio;			/* -100 .. 100, higher first; 0 normal */
	const char *name;		/* may be "" */
	const char *cwd;		/* absolute */
	struct proto_strv argv;		/* count >= 1, argv[0] not "" */
	struct proto_strv env;		/* "KEY=VALUE" each */
};

/*
 * The preload's registration at its first cuInit.  A process kmux did not
 * start (job 0) becomes a job of its own, queued like any other; one that
 * was admitted and lost its daemon says so with PROTO_REG_F_RUNNING, and the
 * daemon takes what it holds as running.
 */
struct proto_register {
	uint64_t job;			/* from KMUX_JOB or an earlier ADMIT; 0: none */
	uint64_t pid_start;		/* start time in clock ticks (/proc stat 22) */
	uint64_t mem;			/* bytes per GPU: declared (KMUX_MEM), 0 =
					 * learn or guess; RUNNING: its quota */
	uint64_t gpus;			/* mask of GPU indices it may use (its
					 * CUDA_VISIBLE_DEVICES), 0 = any;
					 * RUNNING: the GPUs it holds */
	uint32_t pid;			/* > 0 */
	uint32_t flags;			/* PROTO_REG_F_* */
	uint32_t ngpus;			/* 1..64, <= popcount(gpus) when gpus != 0;
					 * RUNNING: = popcount(gpus), gpus != 0 */
	const char *name;		/* KMUX_NAME or ""; < PROTO_MAX_NAME */
	struct proto_strv argv;		/* the command, keys its profile; >= 1 */
};

struct proto_alloc_update {
	uint64_t job;
	uint32_t pid;
	uint32_t gpu;			/* < PROTO_MAX_GPUS */
	uint64_t resident;		/* <= peak */
	uint64_t peak;
	uint64_t want;			/* quota asked for; 0: just reporting */
	uint64_t kernels;		/* launches since the process started */
	/* The memory manager (KMUX_MEMORY), all 0 without one: bytes whose
	 * contents are in host memory, bytes of address ranges it manages
	 * (resident, evicted or never backed), evictions and restores so far. */
	uint64_t evicted;
	uint64_t reserved;
	uint64_t evicts;
	uint64_t restores;
	uint32_t flags;			/* PROTO_ALLOC_F_* */
	/* v6, evict mode (PROTO_ALLOC_F_EVICT; else 0): the run so far
	 * thrashed as a whole (restores >= touched / THRASH_RUN_DIV,
	 * src/preload/thrash.h): its peak backed bytes, the working set its
	 * profile learns when it ends; 0: it did not. */
	uint64_t thrash_ws;
	/* v9: calls that made the host wait for the GPU since the process
	 * started (synchronizations, synchronous copies to the host). */
	uint64_t waits;
};

struct proto_ps {
	uint32_t flags;			/* PROTO_PS_F_* */
	uint32_t states;		/* mask of 1 << state; 0: all */
};

struct proto_wait {
	uint64_t job;
};

/*
 * ATTACH (v11): a `kmux run` whose connection dropped while its job was
 * queued (the daemon died) takes the job back on a new connection; the
 * daemon that recovered the job keeps it queued, unadmitted, for a grace
 * period, and cancels it if no client attaches.
 */
struct proto_attach {
	uint64_t job;			/* > 0, RUN's OK id */
};

struct proto_cancel {
	uint64_t job;
	int32_t signal;			/* 0: the daemon's default (SIGTERM) */
};

struct proto_logs {
	uint64_t job;
	uint64_t offset;		/* byte offset in the log to start at */
	uint32_t flags;			/* PROTO_LOGS_F_* */
};

struct proto_top {
	uint32_t flags;			/* none defined: 0 */
};

/*
 * v13: the command could not be executed (not found, not executable):
 * exit_code is the shell's 127 or 126 and the job is recorded failed, as
 * a submitted job's command that kmuxd could not start.
 */
#define PROTO_FINISHED_F_NOT_STARTED	0x1u

struct proto_finished {
	uint64_t job;
	uint32_t pid;
	int32_t exit_code;		/* 0..255 or PROTO_EXIT_UNKNOWN */
	int32_t signal;			/* 0 or the signal that killed it */
	uint32_t flags;			/* PROTO_FINISHED_F_* */
};

/*
 * STARTED (v12): a `kmux run` client tells the daemon the pid its command
 * runs as, so that kmuxd signals the command itself (cancel, SIGKILL after
 * the grace period) and a restarted daemon finds it alive.  The daemon
 * takes it only from the job's own connection, for a child of that
 * connection's peer.
 */
struct proto_started {
	uint64_t job;
	uint32_t pid;			/* > 0, in the client's pid namespace */
};

struct proto_ok {
	uint64_t id;			/* the new job's id after SUBMIT/RUN; else 0 */
};

struct proto_error {
	int32_t err;			/* positive errno, 1..4095 */
	const char *message;		/* for people; may be "" */
};

struct proto_admit {
	uint64_t job;
	uint64_t quota;			/* bytes per GPU the preload enforces */
	uint32_t ngpus;			/* 1 .. PROTO_MAX_GPUS */
	uint32_t gpus[PROTO_MAX_GPUS];	/* distinct, < PROTO_MAX_GPUS */
	/* kmuxd --mps (v5): the private MPS control daemon's pipe and log
	 * directories the job's CUDA_MPS_* variables name, absolute; both ""
	 * (NULL encodes as "") without --mps. */
	const char *mps_pipe;
	const char *mps_log;
};

struct proto_job_rec {
	uint64_t id;			/* > 0 */
	uint64_t gpus;			/* mask of assigned GPU indices */
	uint64_t mem_request;
	uint64_t mem_peak;
	uint64_t submit_us, start_us, end_us;	/* Unix time in µs, 0: not yet */
	uint32_t uid;
	uint32_t pid;
	uint32_t state;			/* enum proto_job_state */
	int32_t exit_code;		/* meaningful once EXITED */
	int32_t signal;
	uint32_t ngpus;			/* asked for */
	uint64_t mem_quota;		/* bytes per GPU admitted with, 0: not yet */
	uint64_t mem_used;		/* resident bytes its preload reported last */
	uint32_t kernel_rate;		/* kernel launches per second, recently */
	uint32_t flags;			/* PROTO_JOBREC_F_* */
	uint32_t wait_rate;		/* v9: host waits for the GPU per
					 * second, recently (running jobs) */
	uint32_t held;			/* v10: enum proto_held; only on a
					 * queued job */
	/* Its memory manager's last report (running jobs; else 0). */
	uint64_t mem_evicted, mem_reserved, evicts, restores;
	const char *name;
	const char *cmd;		/* the command line for display */
};

/*
 * A list of job records.  To encode give vec; decoding fills raw (the
 * records as they are on the wire, already validated) and leaves vec NULL.
 * Walk it with proto_job_list_next() either way.
 */
struct proto_job_list {
	uint32_t count;
	const struct proto_job_rec *vec;
	const uint8_t *raw;
	size_t raw_len;
};

struct proto_exited {
	uint64_t job;
	uint32_t state;			/* EXITED, CANCELLED or FAILED */
	int32_t exit_code;
	int32_t signal;
};

struct proto_gpu_rec {
	uint32_t index;			/* < PROTO_MAX_GPUS */
	uint32_t ntasks;
	uint64_t mem_total;
	uint64_t mem_committed;
	uint64_t mem_used;
	uint32_t util_pm;		/* recent utilization, per mille, <= 1000 */
	uint32_t busy_pm;		/* busyness score x 1000 */
};

struct proto_gpu_list {
	uint32_t count;			/* <= PROTO_MAX_GPUS */
	struct proto_gpu_rec gpu[PROTO_MAX_GPUS];
	/* v10: why the node has no GPUs ("NVML not available (...)"), for
	 * top; "" otherwise (NULL encodes as ""); < PROTO_MAX_ERRMSG. */
	const char *note;
};

struct proto_log_data {
	uint64_t job;
	uint64_t offset;		/* of data[0] in the log */
	uint32_t flags;			/* PROTO_LOG_F_* */
	uint32_t length;
	const uint8_t *data;		/* length bytes, any content */
};

struct proto_queued {
	uint64_t job;
	uint32_t position;		/* 0: next */
};

/* REGION_ENTER: the caller's pid must be the connection's (SO_PEERCRED). */
struct proto_region_enter {
	uint64_t job;			/* the job it was admitted as; 0: by pid */
	uint32_t pid;			/* > 0 */
	uint32_t gpu;			/* < PROTO_MAX_GPUS */
	uint32_t flags;			/* none defined: 0 */
};

struct proto_region_leave {
	uint32_t pid;			/* > 0 */
};

struct proto_drained {
	uint64_t token;			/* DRAIN's, > 0 */
	uint32_t pid;			/* > 0 */
};

struct proto_drain {
	uint64_t token;			/* > 0, echoed in DRAINED */
	uint32_t gpu;			/* < PROTO_MAX_GPUS */
};

struct proto_region_granted {
	uint64_t region;		/* > 0, for the log */
	uint64_t waited_us;		/* queued + draining */
	uint32_t gpu;			/* < PROTO_MAX_GPUS */
	uint32_t frozen;		/* processes frozen for it */
};

/*
 * MEM_PRESSURE: the GPU's memory in use passed what kmuxd may commit (or
 * keeps a queued task out): a preload under --memory=evict evicts its
 * least recently used objects until `give` bytes are free or none is
 * left, and its next ALLOC_UPDATE shows it.  Others ignore it.  Its budget
 * is unchanged: the objects come back when the program touches them.
 * With PROTO_PRESSURE_F_BUDGET (v7) it gives up budget it is not using
 * (docs/design-memory.md, "Giving back budget to admit a queued task")
 * and answers ALLOC_UPDATE with PROTO_ALLOC_F_SHRUNK when it did.
 */
struct proto_mem_pressure {
	uint64_t give;			/* bytes, > 0 */
	uint32_t gpu;			/* < PROTO_MAX_GPUS */
	uint32_t flags;			/* PROTO_PRESSURE_F_* */
};

struct proto_msg {
	uint16_t type;			/* enum proto_type */
	uint32_t seq;
	union {
		struct proto_hello hello;
		struct proto_job_req job;	/* SUBMIT, RUN */
		struct proto_register reg;
		struct proto_alloc_update alloc;
		struct proto_ps ps;
		struct proto_wait wait;
		struct proto_attach attach;
		struct proto_cancel cancel;
		struct proto_logs logs;
		struct proto_top top;
		struct proto_finished finished;
		struct proto_started started;
		struct proto_ok ok;
		struct proto_error error;
		struct proto_admit admit;
		struct proto_job_list jobs;
		struct proto_exited exited;
		struct proto_gpu_list gpus;
		struct proto_log_data log;
		struct proto_queued queued;
		struct proto_region_enter renter;
		struct proto_region_leave rleave;
		struct proto_drained drained;
		struct proto_drain drain;
		struct proto_region_granted granted;
		struct proto_mem_pressure pressure;
	} u;
};

/* ------------------------------------------------------------------------
 * Codec.
 */

/*
 * An output buffer owned by the caller.  Encoders append one frame at
 * data + len and advance len, or leave it untouched on error, so several
 * frames can be queued in one buffer (TOP's GPU_LIST then JOB_LIST).
 */
struct proto_buf {
	uint8_t *data;
	size_t cap;
	size_t len;
};

/*
 * Encode msg (type and seq included) at the end of out.  0, or:
 *   -EINVAL    msg is not valid (unknown type, a field out of range, a
 *              string list whose block does not hold count strings): the
 *              decoder would refuse it, so it is not sent;
 *   -EMSGSIZE  the frame would exceed PROTO_MAX_MSG;
 *   -ENOSPC    it fits the protocol but not out (grow out and retry).
 */
int proto_encode(struct proto_buf *out, const struct proto_msg *msg);

/* One per message type: the same as proto_encode(). */
int proto_encode_hello(struct proto_buf *out, uint32_t seq,
		       const struct proto_hello *m);
int proto_encode_submit(struct proto_buf *out, uint32_t seq,
			const struct proto_job_req *m);
int proto_encode_run(struct proto_buf *out, uint32_t seq,
		     const struct proto_job_req *m);
int proto_encode_register(struct proto_buf *out, uint32_t seq,
			  const struct proto_register *m);
int proto_encode_alloc_update(struct proto_buf *out, uint32_t seq,
			      const struct proto_alloc_update *m);
int proto_encode_ps(struct proto_buf *out, uint32_t seq,
		    const struct proto_ps *m);
int proto_encode_wait(struct proto_buf *out, uint32_t seq,
		      const struct proto_wait *m);
int proto_encode_attach(struct proto_buf *out, uint32_t seq,
			const struct proto_attach *m);
int proto_encode_cancel(struct proto_buf *out, uint32_t seq,
			const struct proto_cancel *m);
int proto_encode_logs(struct proto_buf *out, uint32_t seq,
		      const struct proto_logs *m);
int proto_encode_top(struct proto_buf *out, uint32_t seq,
		     const struct proto_top *m);
int proto_encode_finished(struct proto_buf *out, uint32_t seq,
			  const struct proto_finished *m);
int proto_encode_started(struct proto_buf *out, uint32_t seq,
			 const struct proto_started *m);
int proto_encode_ok(struct proto_buf *out, uint32_t seq,
		    const struct proto_ok *m);
int proto_encode_error(struct proto_buf *out, uint32_t seq,
		       const struct proto_error *m);
int proto_encode_admit(struct proto_buf *out, uint32_t seq,
		       const struct proto_admit *m);
int proto_encode_job_list(struct proto_buf *out, uint32_t seq,
			  const struct proto_job_list *m);
int proto_encode_exited(struct proto_buf *out, uint32_t seq,
			const struct proto_exited *m);
int proto_encode_gpu_list(struct proto_buf *out, uint32_t seq,
			  const struct proto_gpu_list *m);
int proto_encode_log_data(struct proto_buf *out, uint32_t seq,
			  const struct proto_log_data *m);
int proto_encode_queued(struct proto_buf *out, uint32_t seq,
			const struct proto_queued *m);
int proto_encode_region_enter(struct proto_buf *out, uint32_t seq,
			      const struct proto_region_enter *m);
int proto_encode_region_leave(struct proto_buf *out, uint32_t seq,
			      const struct proto_region_leave *m);
int proto_encode_drained(struct proto_buf *out, uint32_t seq,
			 const struct proto_drained *m);
int proto_encode_drain(struct proto_buf *out, uint32_t seq,
		       const struct proto_drain *m);
int proto_encode_region_granted(struct proto_buf *out, uint32_t seq,
				const struct proto_region_granted *m);
int proto_encode_mem_pressure(struct proto_buf *out, uint32_t seq,
			      const struct proto_mem_pressure *m);

/*
 * Decode the frame at the start of buf[0..len).  For stream reassembly:
 * call it on everything received so far; on 0 drop *consumed bytes and call
 * it again.  Returns:
 *   0          *out holds a valid message; *consumed = its frame size.
 *   -EAGAIN    the bytes so far are a valid beginning: read more.  The
 *              header is checked as soon as its bytes arrive, so a bad
 *              magic, version or length is reported without waiting for a
 *              payload that may never come.  *consumed = 0.
 *   -EPROTO    not a kmux frame of this version (magic or version wrong):
 *              the stream cannot be resynchronized.  *consumed = 0.
 *   -EMSGSIZE  the header announces more than PROTO_MAX_MSG.  *consumed = 0.
 *   -EBADMSG   a complete frame whose type is unknown or whose payload is
 *              invalid (short, trailing bytes, string without terminator,
 *              count beyond the payload, field out of range).  *consumed =
 *              the frame size, so a lenient caller could skip it; kmuxd
 *              answers ERROR and closes the connection.
 *   -EINVAL    buf, out or consumed NULL.
 * *consumed <= len always.  Never allocates, never reads beyond len.
 */
int proto_decode(const uint8_t *buf, size_t len, struct proto_msg *out,
		 size_t *consumed);

/*
 * Peek at a header alone (e.g. to answer a peer of another version in its
 * own seq).  0 with the fields in host order, -EAGAIN if len < 16, -EPROTO
 * on a bad magic (the version is not checked here).
 */
int proto_peek_header(const uint8_t *buf, size_t len, uint16_t *version,
		      uint16_t *type, uint32_t *length, uint32_t *seq);

/* An iterator over a strv or a job list: zero it before the first call. */
struct proto_iter {
	size_t off;
	uint32_t i;
};

/* Next string of v into *s: 1, or 0 at the end. */
int proto_strv_next(const struct proto_strv *v, struct proto_iter *it,
		    const char **s);

/*
 * Copy v into one allocation: a NULL-terminated pointer array followed by
 * the strings, for execve().  free(*out) releases it.  0 or -ENOMEM.
 */
int proto_strv_dup(const struct proto_strv *v, char ***out);

/* Next record of l into *rec (strings point into l's memory): 1, or 0. */
int proto_job_list_next(const struct proto_job_list *l, struct proto_iter *it,
			struct proto_job_rec *rec);

/* "HELLO", "ADMIT", ...; "?" for an unknown type. */
const char *proto_type_name(uint16_t type);
/* 1xx: true for a message a client may send to the daemon. */
bool proto_type_is_request(uint16_t type);

/* "queued", "running", "exited", "cancelled", "failed"; NULL if unknown. */
const char *proto_job_state_name(uint32_t state);
/* The reverse: 0 and *state, or -EINVAL. */
int proto_job_state_parse(const char *name, uint32_t *state);

#endif
