/*
 * ptx-range.h - byte ranges that a kernel's pointer parameters reach, for
 * one launch geometry, by interval analysis over the kernel's PTX.
 *
 * The exact extents of ptx-readonly.c cover accesses at constant offsets
 * only.  Most kernels index: p[blockIdx.x * n + threadIdx.x], loops over
 * rows.  Here every register holds an interval (or "parameter j plus an
 * interval"), branches narrow them, and a loop's induction variables are
 * bounded through its trip count, so such a parameter gets a range when
 * the indices are bounded by constants and the grid.  ptx-readonly.c
 * builds the program while it parses; docs/design-streams.md, "Ranges",
 * says what is proven.  Pure logic, libc only.
 */
#ifndef KMUX_PTX_RANGE_H
#define KMUX_PTX_RANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ptxr_prog;

/* One operand, as ptx-readonly.c decoded it. */
enum ptxr_opnd_kind {
	PTXR_O_NONE,
	PTXR_O_REG,	/* reg */
	PTXR_O_IMM,	/* imm (integers only) */
	PTXR_O_SPEC,	/* spec: PTXR_S_* */
	PTXR_O_ADDR,	/* [reg + imm]; reg -1: [symbol + imm] */
	PTXR_O_PARAM,	/* [param + imm]: reg is the parameter index */
	PTXR_O_OTHER,	/* anything else: a symbol, a float, a vector */
};

enum ptxr_spec {
	PTXR_S_TID, PTXR_S_NTID = 3, PTXR_S_CTAID = 6, PTXR_S_NCTAID = 9,
	PTXR_S_LANEID = 12, PTXR_S_WARPSZ, PTXR_S_OTHER,
};

struct ptxr_opnd {
	uint8_t kind;
	uint8_t spec;
	int32_t reg;
	int64_t imm;
};

/* The launch: grid and block dimensions. */
struct ptxr_geom {
	uint32_t grid[3], block[3];
};

struct ptxr_prog *ptxr_new(void);
/* Programs are shared (ptx-table hands them to kparams): counted. */
void ptxr_ref(struct ptxr_prog *p);
void ptxr_unref(struct ptxr_prog *p);

/* A label before the next instruction.  Returns 0 or -ENOMEM. */
int ptxr_label(struct ptxr_prog *p, const char *name, size_t len);

/* What ptx-readonly.c's classes say an instruction does to memory. */
enum ptxr_kind {
	PTXR_K_PURE,	/* registers in, registers out */
	PTXR_K_LOAD,	/* dsts <- memory at the address operand */
	PTXR_K_STORE,	/* st, atom, red: the address and the values escape */
	PTXR_K_LDPARAM,	/* ld.param */
	PTXR_K_OTHER,	/* calls, copies, unknown: every operand escapes */
};

/* One instruction, decoded by ptx-readonly.c. */
struct ptxr_desc {
	const char *op;		/* opcode text, e.g. "mad.wide.s32" */
	size_t oplen;
	enum ptxr_kind kind;
	const int *dst;		/* destination registers */
	int ndst;
	const struct ptxr_opnd *src;	/* the operands after them */
	int nsrc;
	int guard;		/* predicate register, -1: none */
	bool guard_neg;
	const char *target;	/* bra: the label */
	size_t tlen;
	uint32_t mem_width;	/* loads/stores: bytes, 0: not understood */
	bool mem_global;	/* .global, else generic */
	/* Registers inside vector operands ({%rd1, %rd2}): values that a
	 * store or call hands on, which src[] cannot name. */
	const int *vec;
	int nvec;
};

/*
 * Append one instruction.  Anything not understood makes its destinations
 * unknown and, when a parameter's pointer may flow into it, leaves that
 * parameter without a range (ptxr_finish).  Returns 0 or -ENOMEM.
 */
int ptxr_add(struct ptxr_prog *p, const struct ptxr_desc *d);

/*
 * After the body: nreg registers, taint[r] the parameters register r may
 * derive from (ptx-readonly.c's flow-insensitive taint), psize[] the np
 * parameters' sizes, cand the pointer parameters worth a range.  Returns
 * 0 when some candidate may get one, -EINVAL when none can (the program
 * is then useless), -ENOMEM.
 */
int ptxr_finish(struct ptxr_prog *p, int nreg, const uint64_t *taint,
		const uint32_t *psize, int np, uint64_t cand);

/* The candidates ptxr_finish() kept. */
uint64_t ptxr_candidates(const struct ptxr_prog *p);

/*
 * Solve for one launch: bit j of *has is set and [lo[j], hi[j]) holds
 * the bytes from parameter j's value that the kernel can reach through
 * it, for each candidate j proven.  lo and hi have PTXR_MAX_PARAMS
 * entries.  Returns 0, -E2BIG (too large to analyse), -ENOMEM.
 */
#define PTXR_MAX_PARAMS 64
int ptxr_solve(const struct ptxr_prog *p, const struct ptxr_geom *g,
	       uint64_t *has, int64_t *lo, int64_t *hi);

#endif
