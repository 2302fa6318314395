/*
 * ptx-range.c - interval analysis of one PTX .entry: the bytes each
 * pointer parameter can reach, for one launch geometry.
 *
 * Owns the instruction form ptx-readonly.c decodes into, the control-flow
 * graph, loops and their induction variables, and the abstract
 * interpretation.  Each register holds BOT (no value yet), an integer
 * interval, "parameter j plus an interval of bytes" (a pointer), or TOP.
 * Integers are intervals of mathematical values standing for their bit
 * patterns modulo 2^width, kept either in the unsigned or the signed
 * representation; an operation that may wrap in a way an interval cannot
 * say gives TOP.  Branches narrow the registers their comparison tests.
 *
 * Loops: a value carried around a loop would only widen to TOP, which
 * loses every pointer stepped through an array (nvcc strength-reduces
 * p[i] into a pointer bumped each iteration).  So for a loop with one
 * latch whose branch back tests a basic induction variable (one add of a
 * constant per iteration, in the latch) against a loop-invariant bound,
 * the trip count is bounded, and every basic induction variable of the
 * loop is then init + step * [0, trips] at the header.  Other values
 * carried around loops widen to TOP after a few passes.
 *
 * A parameter j gets a range when every access (load, store, atomic,
 * reduction) whose address may derive from it (the taint of
 * ptx-readonly.c, flow-insensitive and so sound) has an address "j plus a
 * bounded interval" in the state space the access names, and its value
 * never reaches a store, a call or an instruction this file does not
 * model as arithmetic.  Anything else: no range, as before.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ptx-range.h"
#include "ptx-text.h"

/* Blocks x registers analysed per launch; more: no ranges. */
#define RANGE_CELLS_MAX ((size_t)1 << 18)
#define RANGE_PASSES_MAX 64	/* over all blocks; more: no ranges */
#define RANGE_WIDEN_AFTER 3	/* header visits before widening */
#define RANGE_NARROW_PASSES 4	/* descending passes after it */
#define RANGE_OFF_MAX ((int64_t)1 << 40)	/* byte offsets believed */
#define RANGE_TRIPS_MAX ((int64_t)1 << 40)

typedef __int128 i128;

enum {
	OP_TOP,		/* destinations unknown, operands harmless */
	OP_ESC,		/* destinations unknown, operands escape */
	OP_NOP,
	OP_MOV, OP_ADD, OP_SUB, OP_MUL, OP_MULW, OP_MAD, OP_MADW,
	OP_SHL, OP_SHR, OP_AND, OP_OR, OP_XOR, OP_NOT, OP_NEG,
	OP_MIN, OP_MAX, OP_CVT, OP_CVTA, OP_SELP, OP_SETP,
	OP_LDPARAM, OP_LOAD, OP_STORE, OP_BRA, OP_EXIT,
};

enum { C_NONE, C_EQ, C_NE, C_LT, C_LE, C_GT, C_GE };

struct rins {
	uint8_t op;
	uint8_t w;		/* bytes of the operation's type */
	uint8_t sgn;		/* a signed type */
	uint8_t cmp;		/* OP_SETP: C_*, C_NONE: no narrowing */
	uint8_t sw, ssgn;	/* OP_CVT: the source type */
	uint8_t global;		/* OP_LOAD, OP_STORE: .global */
	uint8_t guard_neg;
	int32_t guard;
	int32_t dst, ndst;	/* into prog.dst */
	int32_t src, nsrc;	/* into prog.opnd */
	int32_t vec, nvec;	/* into prog.dst: registers of vector operands */
	int32_t target;		/* OP_BRA: into prog.tname, then a block */
	uint32_t mwidth;
};

/* A loop's exit test, on the value its induction variable has after the
 * latch's add: the loop goes on while "iv cmp bound". */
struct ltest {
	int32_t iv;		/* into prog.iv */
	uint8_t cmp, sgn, w;
	struct ptxr_opnd bound;
};

struct loop {
	int32_t header;
	int32_t latch;		/* -1: several */
	bool reducible;
	uint8_t *body;		/* nblk flags */
	uint8_t *defd;		/* nreg flags: defined somewhere in body */
	int32_t iv0, niv;	/* into prog.iv */
	bool has_test;
	struct ltest test;
};

/* reg += step each iteration (step: a constant or loop-invariant
 * register, whose value is known only when solving); neg: a sub; w: the
 * bytes the add works in. */
struct ivar {
	int32_t reg;
	bool neg;
	uint8_t w;
	struct ptxr_opnd step;
};

struct label {
	char *name;
	int32_t at;
};

struct ptxr_prog {
	atomic_int refs;
	struct rins *ins;
	int nins, capins;
	int *dst;
	int ndst, capdst;
	struct ptxr_opnd *opnd;
	int nopnd, capopnd;
	struct label *lab;
	int nlab, caplab;
	char **tname;
	int ntname, captname;
	bool bad;		/* something makes ranges impossible */
	/* ptxr_finish() */
	int nreg, np;
	uint64_t *taint;
	uint8_t *rw;		/* per register: bytes its definitions write */
	uint64_t cand;
	int nblk;
	int32_t *bstart;	/* nblk + 1 */
	int32_t *succ;		/* 2 per block, -1: none */
	int32_t *pred0, *preds;	/* CSR: block b's preds[pred0[b]..pred0[b+1]) */
	uint8_t *back;		/* per preds[] entry: a back edge */
	int32_t *rpo;
	int nrpo;
	int32_t *loop_of;	/* per block: its loop when a header, else -1 */
	int32_t *refine;	/* per block: the setp its branch tests, -1 */
	struct loop *loop;
	int nloop;
	struct ivar *iv;
	int niv, capiv;
};

/* ---- building ---- */

struct ptxr_prog *ptxr_new(void)
{
	struct ptxr_prog *p = calloc(1, sizeof(*p));

	if (p)
		atomic_init(&p->refs, 1);
	return p;
}

void ptxr_ref(struct ptxr_prog *p)
{
	if (p)
		atomic_fetch_add(&p->refs, 1);
}

void ptxr_unref(struct ptxr_prog *p)
{
	if (!p || atomic_fetch_sub(&p->refs, 1) != 1)
		return;
	for (int i = 0; i < p->nlab; i++)
		free(p->lab[i].name);
	for (int i = 0; i < p->ntname; i++)
		free(p->tname[i]);
	for (int i = 0; i < p->nloop; i++) {
		free(p->loop[i].body);
		free(p->loop[i].defd);
	}
	free(p->lab);
	free(p->tname);
	free(p->ins);
	free(p->dst);
	free(p->opnd);
	free(p->taint);
	free(p->rw);
	free(p->bstart);
	free(p->succ);
	free(p->pred0);
	free(p->preds);
	free(p->back);
	free(p->rpo);
	free(p->loop_of);
	free(p->refine);
	free(p->loop);
	free(p->iv);
	free(p);
}

int ptxr_label(struct ptxr_prog *p, const char *name, size_t len)
{
	char *n;

	if (ptx_grow((void **)&p->lab, &p->caplab, p->nlab + 1,
		     sizeof(*p->lab)))
		return -ENOMEM;
	n = strndup(name, len);
	if (!n)
		return -ENOMEM;
	p->lab[p->nlab++] = (struct label){ .name = n, .at = p->nins };
	return 0;
}

/* A type component (without its dot) that is not an integer. */
static bool comp_is_float(const char *c, size_t n)
{
	static const char *const pre[] = { "bf", "tf", "pred", "e4m", "e5m",
					   "e2m", "e3m" };

	if (n >= 2 && c[0] == 'f' && c[1] >= '0' && c[1] <= '9')
		return true;
	for (size_t i = 0; i < sizeof(pre) / sizeof(pre[0]); i++)
		if (n >= strlen(pre[i]) &&
		    memcmp(c, pre[i], strlen(pre[i])) == 0)
			return true;
	return false;
}

/*
 * The integer types named in op, in order: width in bytes and signedness
 * (up to two); *fl set when a float or predicate type is there.  Returns
 * how many integer types.
 */
static int int_types(const char *op, size_t n, uint8_t w[2], uint8_t s[2],
		     bool *fl)
{
	int k = 0;

	*fl = false;
	for (size_t i = 0; i < n; i++) {
		size_t j = i + 1;
		const char *c = op + i + 1;
		unsigned bits = 0;
		bool digits = true;

		if (op[i] != '.')
			continue;
		while (j < n && op[j] != '.')
			j++;
		if (comp_is_float(c, j - i - 1))
			*fl = true;
		if ((*c == 's' || *c == 'u' || *c == 'b') && j - i >= 3) {
			for (size_t q = i + 2; q < j; q++) {
				if (op[q] < '0' || op[q] > '9') {
					digits = false;
					break;
				}
				bits = bits * 10 + (unsigned)(op[q] - '0');
			}
			if (digits && (bits == 8 || bits == 16 || bits == 32 ||
				       bits == 64)) {
				if (k < 2) {
					w[k] = (uint8_t)(bits / 8);
					s[k] = *c == 's';
				}
				k++;
			} else if (digits) {
				*fl = true;	/* .b128 and the like */
			}
		}
		i = j - 1;
	}
	return k;
}

static bool base_is(const char *op, size_t base, const char *w)
{
	return strlen(w) == base && memcmp(op, w, base) == 0;
}

/* The comparison of a setp, C_NONE when it is not an integer one. */
static uint8_t setp_cmp(const char *op, size_t n, uint8_t *uns)
{
	static const struct {
		const char *name;
		uint8_t cmp, uns;
	} t[] = {
		{ ".eq", C_EQ, 0 }, { ".ne", C_NE, 0 }, { ".lt", C_LT, 0 },
		{ ".le", C_LE, 0 }, { ".gt", C_GT, 0 }, { ".ge", C_GE, 0 },
		{ ".lo", C_LT, 1 }, { ".ls", C_LE, 1 }, { ".hi", C_GT, 1 },
		{ ".hs", C_GE, 1 },
	};

	/* A combined predicate (setp.lt.and.s32 p, a, b, q) narrows less. */
	if (ptx_op_has(op, n, ".and") || ptx_op_has(op, n, ".or") ||
	    ptx_op_has(op, n, ".xor"))
		return C_NONE;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (ptx_op_has(op, n, t[i].name)) {
			*uns = t[i].uns;
			return t[i].cmp;
		}
	return C_NONE;
}

/* Pure instructions: which OP_* and types. */
static void decode_pure(struct rins *r, const char *op, size_t n,
			size_t base, int nsrc)
{
	uint8_t w[2] = { 0, 0 }, s[2] = { 0, 0 }, uns = 0;
	bool fl;
	int k = int_types(op, n, w, s, &fl);
	bool one_int = k == 1 && !fl;
	bool plain = one_int && !ptx_op_has(op, n, ".sat") &&
		     !ptx_op_has(op, n, ".cc");

	r->op = OP_TOP;
	r->w = w[0];
	r->sgn = s[0];
	if (base_is(op, base, "bra")) {
		r->op = OP_BRA;
	} else if (base_is(op, base, "ret") || base_is(op, base, "exit")) {
		r->op = OP_EXIT;
	} else if (base_is(op, base, "bar") || base_is(op, base, "barrier") ||
		   base_is(op, base, "membar") || base_is(op, base, "fence")) {
		r->op = OP_NOP;
	} else if (base_is(op, base, "mov")) {
		if (one_int && nsrc == 1)
			r->op = OP_MOV;
	} else if (base_is(op, base, "cvt")) {
		if (k == 2 && !fl && !ptx_op_has(op, n, ".sat")) {
			r->op = OP_CVT;
			r->sw = w[1];
			r->ssgn = s[1];
		}
	} else if (base_is(op, base, "cvta")) {
		if (nsrc == 1 && ptx_op_has(op, n, ".to") &&
		    ptx_op_has(op, n, ".global") &&
		    w[0] == 8)
			r->op = OP_CVTA;
	} else if (base_is(op, base, "setp")) {
		r->op = OP_SETP;
		if (one_int && nsrc == 2)
			r->cmp = setp_cmp(op, n, &uns);
		if (uns)
			r->sgn = 0;
	} else if (base_is(op, base, "selp")) {
		if (nsrc == 3)
			r->op = OP_SELP;
	} else if (!plain) {
		r->op = OP_TOP;
	} else if (base_is(op, base, "add") && nsrc == 2) {
		r->op = OP_ADD;
	} else if (base_is(op, base, "sub") && nsrc == 2) {
		r->op = OP_SUB;
	} else if (base_is(op, base, "mul") && nsrc == 2) {
		/*
		 * .wide is PTX only for 16- and 32-bit sources; a 64-bit one
		 * (malformed text) would make a 128-bit product no i128
		 * holds: not interpreted.
		 */
		r->op = ptx_op_has(op, n, ".wide") ? (r->w <= 4 ? OP_MULW :
						     OP_TOP) :
			ptx_op_has(op, n, ".lo") ? OP_MUL : OP_TOP;
	} else if (base_is(op, base, "mad") && nsrc == 3) {
		r->op = ptx_op_has(op, n, ".wide") ? (r->w <= 4 ? OP_MADW :
						     OP_TOP) :
			ptx_op_has(op, n, ".lo") ? OP_MAD : OP_TOP;
	} else if (base_is(op, base, "shl") && nsrc == 2) {
		r->op = OP_SHL;
	} else if (base_is(op, base, "shr") && nsrc == 2) {
		r->op = OP_SHR;
	} else if (base_is(op, base, "and") && nsrc == 2) {
		r->op = OP_AND;
	} else if (base_is(op, base, "or") && nsrc == 2) {
		r->op = OP_OR;
	} else if (base_is(op, base, "xor") && nsrc == 2) {
		r->op = OP_XOR;
	} else if (base_is(op, base, "not") && nsrc == 1) {
		r->op = OP_NOT;
	} else if (base_is(op, base, "neg") && nsrc == 1) {
		r->op = OP_NEG;
	} else if (base_is(op, base, "min") && nsrc == 2) {
		r->op = OP_MIN;
	} else if (base_is(op, base, "max") && nsrc == 2) {
		r->op = OP_MAX;
	}
}

int ptxr_add(struct ptxr_prog *p, const struct ptxr_desc *d)
{
	struct rins r = { .guard = d->guard, .guard_neg = d->guard_neg,
			  .target = -1 };
	size_t base;

	for (base = 0; base < d->oplen && d->op[base] != '.'; base++)
		;
	switch (d->kind) {
	case PTXR_K_PURE:
		decode_pure(&r, d->op, d->oplen, base, d->nsrc);
		if (base_is(d->op, base, "brx") || base_is(d->op, base, "call"))
			r.op = OP_ESC;
		break;
	case PTXR_K_LOAD:
		r.op = OP_LOAD;
		break;
	case PTXR_K_STORE:
		r.op = OP_STORE;
		break;
	case PTXR_K_LDPARAM:
		r.op = OP_LDPARAM;
		r.w = ptx_op_has(d->op, d->oplen, ".u64") ||
		      ptx_op_has(d->op, d->oplen, ".b64") ||
		      ptx_op_has(d->op, d->oplen, ".s64") ? 8 : 0;
		break;
	default:
		r.op = OP_ESC;
		break;
	}
	/* An indirect branch: the graph is unknown. */
	if (base_is(d->op, base, "brx"))
		p->bad = true;
	if ((r.op == OP_LOAD || r.op == OP_STORE)) {
		r.mwidth = d->mem_width;
		r.global = d->mem_global;
	}
	if (r.op == OP_BRA) {
		char *t;

		if (!d->target || !d->tlen) {
			p->bad = true;
			r.op = OP_ESC;
		} else {
			if (ptx_grow((void **)&p->tname, &p->captname,
				 p->ntname + 1, sizeof(*p->tname)))
				return -ENOMEM;
			t = strndup(d->target, d->tlen);
			if (!t)
				return -ENOMEM;
			p->tname[p->ntname] = t;
			r.target = p->ntname++;
		}
	}
	if (ptx_grow((void **)&p->dst, &p->capdst,
		     p->ndst + d->ndst + d->nvec + 1, sizeof(int)) ||
	    ptx_grow((void **)&p->opnd, &p->capopnd, p->nopnd + d->nsrc + 1,
		 sizeof(*p->opnd)) ||
	    ptx_grow((void **)&p->ins, &p->capins, p->nins + 1, sizeof(r)))
		return -ENOMEM;
	r.dst = p->ndst;
	r.ndst = d->ndst;
	memcpy(p->dst + p->ndst, d->dst, (size_t)d->ndst * sizeof(int));
	p->ndst += d->ndst;
	r.vec = p->ndst;
	r.nvec = d->nvec;
	if (d->nvec)
		memcpy(p->dst + p->ndst, d->vec, (size_t)d->nvec * sizeof(int));
	p->ndst += d->nvec;
	r.src = p->nopnd;
	r.nsrc = d->nsrc;
	memcpy(p->opnd + p->nopnd, d->src, (size_t)d->nsrc * sizeof(*d->src));
	p->nopnd += d->nsrc;
	p->ins[p->nins++] = r;
	return 0;
}

/* ---- the graph, loops and induction variables ---- */

static int label_cmp(const void *a, const void *b)
{
	return strcmp(((const struct label *)a)->name,
		      ((const struct label *)b)->name);
}

/* After the labels are sorted (cfg_blocks): where name is, -1: nowhere. */
static int label_find(const struct ptxr_prog *p, const char *name)
{
	struct label key = { .name = (char *)name };
	const struct label *l;

	if (p->nlab == 0)
		return -1;
	l = bsearch(&key, p->lab, (size_t)p->nlab, sizeof(*p->lab), label_cmp);
	return l ? l->at : -1;
}

/* The block that starts at instruction at, -1 when none (the end). */
static int block_at(const struct ptxr_prog *p, int at)
{
	int lo = 0, hi = p->nblk - 1;

	while (lo <= hi) {
		int m = (lo + hi) / 2;

		if (p->bstart[m] == at)
			return m;
		if (p->bstart[m] < at)
			lo = m + 1;
		else
			hi = m - 1;
	}
	return -1;
}

static bool defines(const struct ptxr_prog *p, const struct rins *r, int reg)
{
	for (int i = 0; i < r->ndst; i++)
		if (p->dst[r->dst + i] == reg)
			return true;
	return false;
}

static int cfg_blocks(struct ptxr_prog *p)
{
	uint8_t *lead;
	int nb = 0;

	if (p->nins <= 0)
		return -EINVAL;
	lead = calloc((size_t)p->nins + 1, 1);
	if (!lead)
		return -ENOMEM;
	/* Big kernels have thousands of labels: look them up sorted. */
	if (p->nlab > 1)
		qsort(p->lab, (size_t)p->nlab, sizeof(*p->lab), label_cmp);
	/* A name twice (nested scopes): which one a branch means is unknown. */
	for (int i = 1; i < p->nlab; i++)
		if (strcmp(p->lab[i - 1].name, p->lab[i].name) == 0)
			p->bad = true;
	lead[0] = 1;
	for (int i = 0; i < p->nins; i++) {
		struct rins *r = &p->ins[i];

		if (r->op == OP_BRA) {
			int at = label_find(p, p->tname[r->target]);

			if (at < 0) {
				p->bad = true;
				at = p->nins;
			}
			r->target = at;
			lead[at] = 1;
		}
		if (r->op == OP_BRA || r->op == OP_EXIT)
			lead[i + 1] = 1;
	}
	for (int i = 0; i < p->nins; i++)
		nb += lead[i];
	p->nblk = nb;
	p->bstart = malloc(((size_t)nb + 1) * sizeof(int32_t));
	p->succ = malloc((size_t)nb * 2 * sizeof(int32_t));
	if (!p->bstart || !p->succ) {
		free(lead);
		return -ENOMEM;
	}
	nb = 0;
	for (int i = 0; i < p->nins; i++)
		if (lead[i])
			p->bstart[nb++] = i;
	p->bstart[nb] = p->nins;
	free(lead);
	for (int b = 0; b < nb; b++) {
		const struct rins *r = &p->ins[p->bstart[b + 1] - 1];
		int fall = b + 1 < nb ? b + 1 : -1;
		int32_t *s = &p->succ[2 * b];

		s[0] = s[1] = -1;
		if (r->op == OP_BRA) {
			s[0] = block_at(p, r->target);
			if (r->guard >= 0 && fall != s[0])
				s[1] = fall;
		} else if (r->op == OP_EXIT) {
			if (r->guard >= 0)
				s[0] = fall;
		} else {
			s[0] = fall;
		}
	}
	return 0;
}

/* Predecessors, depth-first order and back edges. */
static int cfg_order(struct ptxr_prog *p)
{
	int nb = p->nblk, top = 0, n = 0;
	int32_t *stack = malloc((size_t)nb * sizeof(*stack));
	uint8_t *edge = calloc((size_t)nb, 1);	/* next successor to try */
	uint8_t *state = calloc((size_t)nb, 1);	/* 0 new, 1 open, 2 done */
	int32_t *post = malloc((size_t)nb * sizeof(*post));
	int npost = 0, r = -ENOMEM;

	p->pred0 = calloc((size_t)nb + 1, sizeof(int32_t));
	p->preds = malloc((size_t)nb * 2 * sizeof(int32_t) + 1);
	p->back = calloc((size_t)nb * 2 + 1, 1);
	p->rpo = malloc((size_t)nb * sizeof(int32_t));
	if (!stack || !edge || !state || !post || !p->pred0 || !p->preds ||
	    !p->back || !p->rpo)
		goto out;
	for (int b = 0; b < nb; b++)
		for (int k = 0; k < 2; k++)
			if (p->succ[2 * b + k] >= 0)
				p->pred0[p->succ[2 * b + k] + 1]++;
	for (int b = 0; b < nb; b++)
		p->pred0[b + 1] += p->pred0[b];
	{
		int32_t *fill = calloc((size_t)nb, sizeof(int32_t));

		if (!fill)
			goto out;
		for (int b = 0; b < nb; b++)
			for (int k = 0; k < 2; k++) {
				int s = p->succ[2 * b + k];

				if (s >= 0)
					p->preds[p->pred0[s] + fill[s]++] = b;
			}
		free(fill);
	}
	stack[top++] = 0;
	state[0] = 1;
	while (top) {
		int b = stack[top - 1];

		if (edge[b] < 2) {
			int s = p->succ[2 * b + edge[b]++];

			if (s < 0)
				continue;
			if (state[s] == 0) {
				state[s] = 1;
				stack[top++] = s;
			} else if (state[s] == 1) {
				for (int i = p->pred0[s]; i < p->pred0[s + 1];
				     i++)
					if (p->preds[i] == b)
						p->back[i] = 1;
			}
			continue;
		}
		state[b] = 2;
		post[npost++] = b;
		top--;
	}
	for (int i = npost - 1; i >= 0; i--)
		p->rpo[n++] = post[i];
	p->nrpo = n;
	r = 0;
out:
	free(stack);
	free(edge);
	free(state);
	free(post);
	return r;
}

/* Basic induction variables and the exit test of loop l. */
static int loop_ivs(struct ptxr_prog *p, struct loop *l)
{
	int *defs = calloc((size_t)p->nreg + 1, sizeof(int));
	int *defat = malloc(((size_t)p->nreg + 1) * sizeof(int));
	int bl = l->latch, last, g, set = -1;
	const struct rins *br;

	if (!defs || !defat) {
		free(defs);
		free(defat);
		return -ENOMEM;
	}
	l->iv0 = p->niv;
	l->niv = 0;
	for (int b = 0; b < p->nblk; b++) {
		if (!l->body[b])
			continue;
		for (int i = p->bstart[b]; i < p->bstart[b + 1]; i++)
			for (int k = 0; k < p->ins[i].ndst; k++) {
				int d = p->dst[p->ins[i].dst + k];

				if (d >= 0 && d < p->nreg) {
					defs[d]++;
					defat[d] = i;
				}
			}
	}
	/* The latch runs once per iteration unless an inner loop has it. */
	for (int k = 0; k < p->nloop; k++) {
		const struct loop *o = &p->loop[k];

		if (o != l && o->body[bl] && !o->body[l->header])
			goto out;
	}
	for (int d = 0; d < p->nreg; d++) {
		const struct rins *r;
		const struct ptxr_opnd *a, *c;

		if (defs[d] != 1)
			continue;
		r = &p->ins[defat[d]];
		if (defat[d] < p->bstart[bl] || defat[d] >= p->bstart[bl + 1] ||
		    r->guard >= 0 || r->ndst != 1 ||
		    (r->op != OP_ADD && r->op != OP_SUB) ||
		    (r->w != 4 && r->w != 8))
			continue;
		a = &p->opnd[r->src];
		c = &p->opnd[r->src + 1];
		if (r->op == OP_ADD && c->kind == PTXR_O_REG && c->reg == d) {
			const struct ptxr_opnd *t = a;

			a = c;
			c = t;
		}
		if (a->kind != PTXR_O_REG || a->reg != d)
			continue;
		/* The step: a constant, or a register the loop leaves. */
		if (!(c->kind == PTXR_O_IMM && c->imm != 0) &&
		    !(c->kind == PTXR_O_REG && c->reg != d && !defs[c->reg]) &&
		    c->kind != PTXR_O_SPEC)
			continue;
		if (ptx_grow((void **)&p->iv, &p->capiv, p->niv + 1,
			 sizeof(*p->iv)))
			goto nomem;
		p->iv[p->niv++] = (struct ivar){ .reg = d, .step = *c,
						 .neg = r->op == OP_SUB,
						 .w = r->w };
		l->niv++;
	}
	/* The exit test: the latch's branch back, on a setp of an IV. */
	last = p->bstart[bl + 1] - 1;
	br = &p->ins[last];
	if (br->op != OP_BRA || br->guard < 0 ||
	    block_at(p, br->target) != l->header)
		goto out;
	g = br->guard;
	for (int i = last - 1; i >= p->bstart[bl]; i--)
		if (defines(p, &p->ins[i], g)) {
			set = i;
			break;
		}
	if (set < 0 || p->ins[set].op != OP_SETP ||
	    p->ins[set].cmp == C_NONE || p->ins[set].guard >= 0 ||
	    p->ins[set].ndst != 1)
		goto out;
	for (int k = 0; k < l->niv; k++) {
		const struct ivar *v = &p->iv[l->iv0 + k];
		const struct rins *s = &p->ins[set];
		const struct ptxr_opnd *o = &p->opnd[s->src];
		int side = -1;
		uint8_t cmp = s->cmp;
		static const uint8_t swap[] = { C_NONE, C_EQ, C_NE, C_GT, C_GE,
						C_LT, C_LE };
		static const uint8_t neg[] = { C_NONE, C_NE, C_EQ, C_GE, C_GT,
					       C_LE, C_LT };
		const struct ptxr_opnd *bound;

		if (o[0].kind == PTXR_O_REG && o[0].reg == v->reg)
			side = 0;
		else if (o[1].kind == PTXR_O_REG && o[1].reg == v->reg)
			side = 1;
		if (side < 0 || defat[v->reg] > set ||
		    s->w != p->ins[defat[v->reg]].w)
			continue;
		bound = &o[1 - side];
		if (bound->kind == PTXR_O_REG &&
		    (bound->reg < 0 || bound->reg >= p->nreg ||
		     defs[bound->reg]))
			continue;
		if (bound->kind != PTXR_O_REG && bound->kind != PTXR_O_IMM &&
		    bound->kind != PTXR_O_SPEC)
			continue;
		if (side == 1)
			cmp = swap[cmp];
		if (br->guard_neg)
			cmp = neg[cmp];
		l->test = (struct ltest){ .iv = l->iv0 + k, .cmp = cmp,
					  .sgn = s->sgn, .w = s->w,
					  .bound = *bound };
		l->has_test = true;
		break;
	}
out:
	free(defs);
	free(defat);
	return 0;
nomem:
	free(defs);
	free(defat);
	return -ENOMEM;
}

/* Natural loops of the back edges, one per header. */
static int cfg_loops(struct ptxr_prog *p)
{
	int nb = p->nblk;
	int32_t *work = malloc((size_t)nb * sizeof(int32_t) + 1);

	p->loop_of = malloc((size_t)nb * sizeof(int32_t) + 1);
	if (!work || !p->loop_of) {
		free(work);
		return -ENOMEM;
	}
	for (int b = 0; b < nb; b++)
		p->loop_of[b] = -1;
	for (int h = 0; h < nb; h++) {
		struct loop *l = NULL;

		for (int i = p->pred0[h]; i < p->pred0[h + 1]; i++) {
			int u = p->preds[i], top = 0;

			if (!p->back[i])
				continue;
			if (!l) {
				struct loop *nl = realloc(p->loop,
					(size_t)(p->nloop + 1) * sizeof(*nl));

				if (!nl)
					goto nomem;
				p->loop = nl;
				l = &p->loop[p->nloop];
				*l = (struct loop){ .header = h, .latch = u,
						    .reducible = true };
				l->body = calloc((size_t)nb, 1);
				if (!l->body)
					goto nomem;
				p->loop_of[h] = p->nloop++;
				l->body[h] = 1;
			} else {
				l->latch = -1;
			}
			if (!l->body[u]) {
				l->body[u] = 1;
				work[top++] = u;
			}
			while (top) {
				int x = work[--top];

				for (int j = p->pred0[x]; j < p->pred0[x + 1];
				     j++) {
					int y = p->preds[j];

					if (!l->body[y]) {
						l->body[y] = 1;
						work[top++] = y;
					}
				}
			}
		}
	}
	/* Entered other than through the header: not a natural loop. */
	for (int k = 0; k < p->nloop; k++) {
		struct loop *l = &p->loop[k];

		for (int b = 0; b < nb; b++) {
			if (!l->body[b] || b == l->header)
				continue;
			for (int i = p->pred0[b]; i < p->pred0[b + 1]; i++)
				if (!l->body[p->preds[i]])
					l->reducible = false;
		}
	}
	for (int k = 0; k < p->nloop; k++) {
		struct loop *l = &p->loop[k];

		l->defd = calloc((size_t)p->nreg, 1);
		if (!l->defd)
			goto nomem;
		for (int b = 0; b < nb; b++)
			for (int i = p->bstart[b]; l->body[b] &&
			     i < p->bstart[b + 1]; i++)
				for (int j = 0; j < p->ins[i].ndst; j++)
					l->defd[p->dst[p->ins[i].dst + j]] = 1;
		if (l->latch >= 0 && l->reducible && loop_ivs(p, l) < 0)
			goto nomem;
	}
	free(work);
	return 0;
nomem:
	free(work);
	return -ENOMEM;
}

/* Per block ending in a guarded branch: the setp it tests, when the
 * setp's registers stay as they were up to the branch. */
static int cfg_refine(struct ptxr_prog *p)
{
	p->refine = malloc((size_t)p->nblk * sizeof(int32_t) + 1);
	if (!p->refine)
		return -ENOMEM;
	for (int b = 0; b < p->nblk; b++) {
		int last = p->bstart[b + 1] - 1, set = -1;
		const struct rins *br = &p->ins[last];

		p->refine[b] = -1;
		if (br->op != OP_BRA || br->guard < 0)
			continue;
		for (int i = last - 1; i >= p->bstart[b]; i--)
			if (defines(p, &p->ins[i], br->guard)) {
				set = i;
				break;
			}
		if (set < 0 || p->ins[set].op != OP_SETP ||
		    p->ins[set].cmp == C_NONE || p->ins[set].guard >= 0 ||
		    p->ins[set].ndst != 1)
			continue;
		p->refine[b] = set;
		for (int i = set + 1; i < last; i++)
			for (int k = 0; k < 2; k++) {
				const struct ptxr_opnd *o =
					&p->opnd[p->ins[set].src + k];

				if (o->kind == PTXR_O_REG &&
				    defines(p, &p->ins[i], o->reg))
					p->refine[b] = -1;
			}
	}
	return 0;
}

int ptxr_finish(struct ptxr_prog *p, int nreg, const uint64_t *taint,
		const uint32_t *psize, int np, uint64_t cand)
{
	int r;

	p->nreg = nreg;
	p->np = np;
	if (np < PTXR_MAX_PARAMS)
		cand &= ((uint64_t)1 << np) - 1;
	for (int i = 0; i < np && i < PTXR_MAX_PARAMS; i++)
		if (psize[i] != 8)
			cand &= ~((uint64_t)1 << i);
	p->cand = cand;
	if (!cand || p->bad || p->nins == 0 || nreg <= 0)
		return -EINVAL;
	for (int i = 0; i < p->ndst; i++)
		if (p->dst[i] < 0 || p->dst[i] >= nreg)
			return -EINVAL;
	for (int i = 0; i < p->nopnd; i++)
		if ((p->opnd[i].kind == PTXR_O_REG ||
		     p->opnd[i].kind == PTXR_O_ADDR) &&
		    p->opnd[i].reg >= nreg)
			return -EINVAL;
	for (int i = 0; i < p->nins; i++)
		if (p->ins[i].guard >= nreg)
			return -EINVAL;
	p->taint = malloc((size_t)nreg * sizeof(uint64_t));
	if (!p->taint)
		return -ENOMEM;
	memcpy(p->taint, taint, (size_t)nreg * sizeof(uint64_t));
	p->rw = calloc((size_t)nreg, 1);
	if (!p->rw)
		return -ENOMEM;
	for (int i = 0; i < p->nins; i++) {
		const struct rins *q = &p->ins[i];
		int w = q->op == OP_MULW || q->op == OP_MADW ? 2 * q->w : q->w;

		for (int k = 0; k < q->ndst; k++) {
			int d = p->dst[q->dst + k];

			p->rw[d] = (uint8_t)(w > p->rw[d] ? w : p->rw[d]);
		}
	}
	r = cfg_blocks(p);
	if (r == 0)
		r = cfg_order(p);
	if (r == 0)
		r = cfg_loops(p);
	if (r == 0)
		r = cfg_refine(p);
	if (r < 0)
		return r;
	return p->bad ? -EINVAL : 0;
}

uint64_t ptxr_candidates(const struct ptxr_prog *p)
{
	return p ? p->cand : 0;
}

/* ---- the abstract values ---- */

enum { AV_BOT, AV_INT, AV_PTR, AV_TOP };

struct av {
	uint8_t k;
	uint8_t global;		/* AV_PTR: after cvta.to.global */
	int16_t param;		/* AV_PTR */
	int64_t lo, hi;		/* AV_INT: the value; AV_PTR: the offset */
};

static const struct av TOP = { .k = AV_TOP };

static i128 pow2(int bits)
{
	return (i128)1 << bits;
}

static i128 floor_mod(i128 a, i128 m)
{
	i128 r = a % m;

	return r < 0 ? r + m : r;
}

/* [lo, hi] as a w-byte integer: one of its two representations, or TOP. */
static struct av norm(i128 lo, i128 hi, int w)
{
	i128 m, s;

	if (lo > hi || w <= 0)
		return TOP;
	if (w >= 8) {
		if (lo < INT64_MIN || hi > INT64_MAX)
			return TOP;
		return (struct av){ .k = AV_INT, .lo = (int64_t)lo,
				    .hi = (int64_t)hi };
	}
	m = pow2(8 * w);
	if (hi - lo >= m)
		return TOP;
	s = lo - floor_mod(lo, m);
	lo -= s;
	hi -= s;
	if (hi >= m) {
		lo -= m;
		hi -= m;
		if (lo < -m / 2 || hi >= m / 2)
			return TOP;
	}
	return (struct av){ .k = AV_INT, .lo = (int64_t)lo, .hi = (int64_t)hi };
}

/* v read as a w-byte signed or unsigned integer. */
static void view(const struct av *v, int w, bool sgn, i128 *lo, i128 *hi)
{
	int bits = 8 * (w > 0 && w <= 8 ? w : 8);
	i128 m = pow2(bits);
	i128 smin = -m / 2, smax = m / 2 - 1;

	if (v->k != AV_INT) {
		*lo = sgn ? smin : 0;
		*hi = sgn ? smax : m - 1;
		return;
	}
	*lo = v->lo;
	*hi = v->hi;
	if (sgn) {
		if (*lo >= smin && *hi <= smax)
			return;
		if (*lo >= m / 2 && *hi < m) {
			*lo -= m;
			*hi -= m;
			return;
		}
		*lo = smin;
		*hi = smax;
	} else {
		if (*lo >= 0 && *hi < m)
			return;
		if (*lo >= smin && *hi < 0) {
			*lo += m;
			*hi += m;
			return;
		}
		*lo = 0;
		*hi = m - 1;
	}
}

static struct av ptr(const struct av *base, i128 lo, i128 hi)
{
	struct av v = *base;

	lo += base->lo;
	hi += base->hi;
	if (lo < -RANGE_OFF_MAX || hi > RANGE_OFF_MAX)
		return TOP;
	v.lo = (int64_t)lo;
	v.hi = (int64_t)hi;
	return v;
}

static inline bool av_eq(const struct av *a, const struct av *b)
{
	if (a->k != b->k)
		return false;
	if (a->k == AV_BOT || a->k == AV_TOP)
		return true;
	return a->lo == b->lo && a->hi == b->hi &&
	       (a->k == AV_INT ||
		(a->param == b->param && a->global == b->global));
}

/* The narrower of the hulls of a and b in their raw, signed and
 * unsigned forms (w bytes). */
static struct av join(const struct av *a, const struct av *b, int w)
{
	i128 best_lo = 0, best_hi = -1;

	if (a->k == AV_BOT)
		return *b;
	if (b->k == AV_BOT || av_eq(a, b))
		return *a;
	if (a->k == AV_TOP || b->k == AV_TOP || a->k != b->k)
		return TOP;
	if (a->k == AV_PTR) {
		struct av v = *a;

		if (a->param != b->param || a->global != b->global)
			return TOP;
		v.lo = a->lo < b->lo ? a->lo : b->lo;
		v.hi = a->hi > b->hi ? a->hi : b->hi;
		return v;
	}
	for (int form = 0; form < 3; form++) {
		i128 alo = a->lo, ahi = a->hi, blo = b->lo, bhi = b->hi;

		if (form) {
			view(a, w, form == 1, &alo, &ahi);
			view(b, w, form == 1, &blo, &bhi);
		}
		alo = alo < blo ? alo : blo;
		ahi = ahi > bhi ? ahi : bhi;
		if (best_hi < best_lo || ahi - alo < best_hi - best_lo) {
			best_lo = alo;
			best_hi = ahi;
		}
	}
	return norm(best_lo, best_hi, w ? w : 8);
}

/* ---- transfer ---- */

struct solver {
	const struct ptxr_prog *p;
	const struct ptxr_geom *g;
	int nreg;
	struct av *in;		/* nblk x nreg: state at block entry */
	struct av *out;		/* nblk x nreg: state at block exit */
	uint8_t *reach;		/* per block: in[] is set */
	uint8_t *ran;		/* per block: out[] is set */
	uint8_t *pinned;	/* per register: bounded by a trip count */
	int *visits;
	/*
	 * Per block: outver counts rewrites of out[] (and changes of ran[]),
	 * so it only grows; insig is the sum of the predecessors' outver at
	 * the block's last visit, inwiden that visit's phase.  A visit that
	 * would read the same exits in the same phase computes the same
	 * state and changes nothing (see visit()): it is skipped, with
	 * every copy and join it would have made.
	 */
	uint64_t *outver, *insig;
	uint8_t *inwiden;
	struct av *cur;		/* the state being run */
	/* x - (x & m): what the registers were last made of, this run */
	uint32_t *ver, clock, stamp;
	struct sym {
		uint32_t stamp, srcver;
		int32_t src;
		uint8_t kind;	/* SYM_* */
		int64_t mask;
	} *sym;
	/* the check */
	bool check;
	uint64_t seen, fail;
	int64_t lo[PTXR_MAX_PARAMS], hi[PTXR_MAX_PARAMS];
};

enum { SYM_NONE, SYM_COPY, SYM_AND };

static struct av spec_value(const struct solver *s, int spec)
{
	const struct ptxr_geom *g = s->g;
	int d = spec % 3;

	switch (spec - d) {
	case PTXR_S_TID:
		return norm(0, (i128)g->block[d] - 1, 4);
	case PTXR_S_NTID:
		return norm(g->block[d], g->block[d], 4);
	case PTXR_S_CTAID:
		return norm(0, (i128)g->grid[d] - 1, 4);
	case PTXR_S_NCTAID:
		return norm(g->grid[d], g->grid[d], 4);
	}
	if (spec == PTXR_S_LANEID)
		return norm(0, 31, 4);
	if (spec == PTXR_S_WARPSZ)
		return norm(32, 32, 4);
	return TOP;
}

/* Operand o's value in the state st. */
static struct av opv_in(const struct solver *s, const struct av *st,
			const struct ptxr_opnd *o, int w)
{
	struct av v;

	switch (o->kind) {
	case PTXR_O_REG:
		v = st[o->reg];
		return v.k == AV_BOT ? TOP : v;
	case PTXR_O_IMM:
		return norm(o->imm, o->imm, w);
	case PTXR_O_SPEC:
		return spec_value(s, o->spec);
	}
	return TOP;
}

static struct av opv(const struct solver *s, const struct ptxr_opnd *o, int w)
{
	return opv_in(s, s->cur, o, w);
}

static int bitlen(i128 x)
{
	int n = 0;

	while (x > 0) {
		n++;
		x >>= 1;
	}
	return n;
}

/* a & m for a w-byte a and a known mask m. */
static struct av and_mask(const struct av *a, i128 m, int w)
{
	i128 lo, hi, mm;
	int n;

	view(a, w, false, &lo, &hi);
	m = floor_mod(m, pow2(8 * w));
	n = bitlen(hi);
	mm = m & (pow2(n) - 1);
	if (mm == pow2(n) - 1)
		return norm(lo, hi, w);
	/* Only low bits cleared (x & -64): monotone. */
	if ((((pow2(n) - 1) ^ mm) & (((pow2(n) - 1) ^ mm) + 1)) == 0)
		return norm(lo & mm, hi & mm, w);
	return norm(0, hi < mm ? hi : mm, w);
}

static struct av arith(struct solver *s, const struct rins *r)
{
	const struct ptxr_opnd *o = &s->p->opnd[r->src];
	int w = r->w;
	struct av a, b, c;
	i128 alo, ahi, blo, bhi, x[4], lo, hi;

	switch (r->op) {
	case OP_MOV:
		return opv(s, &o[0], w);
	case OP_ADD:
	case OP_SUB:
		a = opv(s, &o[0], w);
		b = opv(s, &o[1], w);
		if (a.k == AV_TOP || b.k == AV_TOP)
			return TOP;
		if (r->op == OP_ADD && a.k == AV_INT && b.k == AV_PTR) {
			c = a;
			a = b;
			b = c;
		}
		if (a.k == AV_PTR && b.k == AV_INT)
			return r->op == OP_ADD ? ptr(&a, b.lo, b.hi) :
						 ptr(&a, -(i128)b.hi,
						     -(i128)b.lo);
		if (a.k == AV_PTR || b.k == AV_PTR) {
			if (r->op == OP_SUB && a.k == AV_PTR && b.k == AV_PTR &&
			    a.param == b.param && a.global == b.global)
				return norm((i128)a.lo - b.hi,
					    (i128)a.hi - b.lo, w);
			return TOP;
		}
		if (r->op == OP_ADD)
			return norm((i128)a.lo + b.lo, (i128)a.hi + b.hi, w);
		return norm((i128)a.lo - b.hi, (i128)a.hi - b.lo, w);
	case OP_MUL:
	case OP_MULW:
	case OP_MAD:
	case OP_MADW:
		a = opv(s, &o[0], w);
		b = opv(s, &o[1], w);
		if (a.k == AV_PTR || b.k == AV_PTR)
			return TOP;
		if (r->op == OP_MULW || r->op == OP_MADW) {
			view(&a, w, r->sgn, &alo, &ahi);
			view(&b, w, r->sgn, &blo, &bhi);
		} else {
			if (a.k != AV_INT || b.k != AV_INT)
				return TOP;
			alo = a.lo;
			ahi = a.hi;
			blo = b.lo;
			bhi = b.hi;
		}
		x[0] = alo * blo;
		x[1] = alo * bhi;
		x[2] = ahi * blo;
		x[3] = ahi * bhi;
		lo = hi = x[0];
		for (int i = 1; i < 4; i++) {
			lo = x[i] < lo ? x[i] : lo;
			hi = x[i] > hi ? x[i] : hi;
		}
		if (r->op == OP_MUL)
			return norm(lo, hi, w);
		if (r->op == OP_MULW)
			return norm(lo, hi, 2 * w);
		c = opv(s, &o[2], r->op == OP_MADW ? 2 * w : w);
		if (c.k == AV_PTR) {
			if (lo < -RANGE_OFF_MAX || hi > RANGE_OFF_MAX)
				return TOP;
			return ptr(&c, lo, hi);
		}
		if (c.k != AV_INT)
			return TOP;
		return norm(lo + c.lo, hi + c.hi,
			    r->op == OP_MADW ? 2 * w : w);
	case OP_SHL:
	case OP_SHR:
		a = opv(s, &o[0], w);
		b = opv(s, &o[1], 4);
		if (a.k == AV_PTR || b.k != AV_INT || b.lo != b.hi ||
		    b.lo < 0 || b.lo >= 8 * w)
			return TOP;
		if (r->op == OP_SHL) {
			if (a.k != AV_INT)
				return TOP;
			return norm((i128)a.lo * pow2((int)b.lo),
				    (i128)a.hi * pow2((int)b.lo), w);
		}
		view(&a, w, r->sgn, &alo, &ahi);
		return norm(alo >> b.lo, ahi >> b.lo, w);
	case OP_AND:
		a = opv(s, &o[0], w);
		b = opv(s, &o[1], w);
		if (a.k == AV_PTR || b.k == AV_PTR)
			return TOP;
		if (b.k == AV_INT && b.lo == b.hi)
			return and_mask(&a, b.lo, w);
		if (a.k == AV_INT && a.lo == a.hi)
			return and_mask(&b, a.lo, w);
		view(&a, w, false, &alo, &ahi);
		view(&b, w, false, &blo, &bhi);
		return norm(0, ahi < bhi ? ahi : bhi, w);
	case OP_OR:
	case OP_XOR:
		a = opv(s, &o[0], w);
		b = opv(s, &o[1], w);
		if (a.k == AV_PTR || b.k == AV_PTR)
			return TOP;
		view(&a, w, false, &alo, &ahi);
		view(&b, w, false, &blo, &bhi);
		if (r->op == OP_OR && blo == bhi &&
		    (blo & (pow2(bitlen(ahi)) - 1)) == 0)
			return norm(alo + blo, ahi + blo, w);
		if (r->op == OP_OR && alo == ahi &&
		    (alo & (pow2(bitlen(bhi)) - 1)) == 0)
			return norm(alo + blo, ahi + bhi, w);
		/* a | b and a ^ b are at most a + b, and below the next
		 * power of two. */
		hi = pow2(bitlen(ahi > bhi ? ahi : bhi)) - 1;
		hi = ahi + bhi < hi ? ahi + bhi : hi;
		lo = r->op == OP_OR ? (alo > blo ? alo : blo) : 0;
		return norm(lo, hi, w);
	case OP_NOT:
	case OP_NEG:
		a = opv(s, &o[0], w);
		if (a.k != AV_INT)
			return TOP;
		if (r->op == OP_NEG)
			return norm(-(i128)a.hi, -(i128)a.lo, w);
		return norm(-(i128)a.hi - 1, -(i128)a.lo - 1, w);
	case OP_MIN:
	case OP_MAX:
		a = opv(s, &o[0], w);
		b = opv(s, &o[1], w);
		if (a.k == AV_PTR || b.k == AV_PTR)
			return TOP;
		view(&a, w, r->sgn, &alo, &ahi);
		view(&b, w, r->sgn, &blo, &bhi);
		if (r->op == OP_MIN)
			return norm(alo < blo ? alo : blo,
				    ahi < bhi ? ahi : bhi, w);
		return norm(alo > blo ? alo : blo, ahi > bhi ? ahi : bhi, w);
	case OP_CVT:
		a = opv(s, &o[0], r->sw);
		if (a.k != AV_INT)
			return TOP;
		view(&a, r->sw, r->ssgn, &alo, &ahi);
		return norm(alo, ahi, w);
	case OP_CVTA:
		a = opv(s, &o[0], 8);
		if (a.k != AV_PTR || a.global)
			return TOP;
		a.global = 1;
		return a;
	case OP_SELP:
		a = opv(s, &o[0], w);
		b = opv(s, &o[1], w);
		return join(&a, &b, w);
	case OP_LDPARAM:
		if (o[0].kind == PTXR_O_PARAM && o[0].imm == 0 && w == 8 &&
		    o[0].reg >= 0 && o[0].reg < PTXR_MAX_PARAMS &&
		    (s->p->cand >> o[0].reg & 1))
			return (struct av){ .k = AV_PTR, .param =
						(int16_t)o[0].reg };
		return TOP;
	}
	return TOP;
}

/* x - (x & m) = x & ~m, which intervals alone cannot see. */
static bool sub_of_and(struct solver *s, const struct rins *r, struct av *v)
{
	const struct ptxr_opnd *o = &s->p->opnd[r->src];
	const struct sym *b, *x;
	int a;

	if (r->op != OP_SUB || o[0].kind != PTXR_O_REG ||
	    o[1].kind != PTXR_O_REG)
		return false;
	a = o[0].reg;
	b = &s->sym[o[1].reg];
	if (b->stamp != s->stamp || b->kind != SYM_AND ||
	    s->ver[b->src] != b->srcver)
		return false;
	if (b->src != a) {
		x = &s->sym[b->src];
		if (x->stamp != s->stamp || x->kind != SYM_COPY ||
		    x->src != a || s->ver[a] != x->srcver)
			return false;
	}
	if (s->cur[a].k != AV_INT)
		return false;
	*v = and_mask(&s->cur[a], ~(i128)b->mask, r->w);
	return true;
}

/* What r makes its destination of, for sub_of_and(). */
static struct sym sym_of(const struct solver *s, const struct rins *r)
{
	const struct ptxr_opnd *o = &s->p->opnd[r->src];
	struct sym y = { .stamp = s->stamp, .kind = SYM_NONE };
	int src = -1;

	if (r->op == OP_MOV && o[0].kind == PTXR_O_REG) {
		y.kind = SYM_COPY;
		src = o[0].reg;
	} else if (r->op == OP_ADD) {
		for (int k = 0; k < 2; k++) {
			const struct ptxr_opnd *z = &o[1 - k];
			bool zero = z->kind == PTXR_O_IMM ? z->imm == 0 :
				    z->kind == PTXR_O_REG &&
				    s->cur[z->reg].k == AV_INT &&
				    s->cur[z->reg].lo == 0 &&
				    s->cur[z->reg].hi == 0;

			if (o[k].kind == PTXR_O_REG && zero) {
				y.kind = SYM_COPY;
				src = o[k].reg;
				break;
			}
		}
	} else if (r->op == OP_AND && o[0].kind == PTXR_O_REG &&
		   o[1].kind == PTXR_O_IMM) {
		y.kind = SYM_AND;
		y.mask = o[1].imm;
		src = o[0].reg;
	}
	if (src < 0)
		return (struct sym){ .stamp = s->stamp };
	y.src = src;
	y.srcver = s->ver[src];
	return y;
}

static void fail_operands(struct solver *s, const struct rins *r, int skip)
{
	for (int i = 0; i < r->nsrc; i++) {
		const struct ptxr_opnd *o = &s->p->opnd[r->src + i];

		if (i == skip)
			continue;
		if ((o->kind == PTXR_O_REG || o->kind == PTXR_O_ADDR) &&
		    o->reg >= 0)
			s->fail |= s->p->taint[o->reg] & s->p->cand;
	}
	for (int i = 0; i < r->nvec; i++)
		s->fail |= s->p->taint[s->p->dst[r->vec + i]] & s->p->cand;
}

/* A load or store: the address checked against its parameters. */
static void check_access(struct solver *s, const struct rins *r)
{
	int ai = -1;

	for (int i = 0; i < r->nsrc; i++)
		if (s->p->opnd[r->src + i].kind == PTXR_O_ADDR) {
			ai = i;
			break;
		}
	if (r->op == OP_STORE)
		fail_operands(s, r, ai);
	if (ai < 0) {
		fail_operands(s, r, -1);
		return;
	}
	{
		const struct ptxr_opnd *o = &s->p->opnd[r->src + ai];
		uint64_t t;
		struct av v;

		if (o->reg < 0)
			return;
		t = s->p->taint[o->reg] & s->p->cand;
		v = s->cur[o->reg];
		for (int j = 0; t && j < PTXR_MAX_PARAMS; j++) {
			uint64_t bit = (uint64_t)1 << j;
			int64_t lo, hi;

			if (!(t & bit))
				continue;
			if (v.k != AV_PTR || v.param != j ||
			    v.global != r->global || r->mwidth == 0) {
				s->fail |= bit;
				continue;
			}
			lo = v.lo + o->imm;
			hi = v.hi + o->imm + (int64_t)r->mwidth;
			if (!(s->seen & bit) || lo < s->lo[j])
				s->lo[j] = lo;
			if (!(s->seen & bit) || hi > s->hi[j])
				s->hi[j] = hi;
			s->seen |= bit;
		}
	}
}

static void run_ins(struct solver *s, const struct rins *r)
{
	struct av v = TOP;

	if (s->check) {
		if (r->op == OP_LOAD || r->op == OP_STORE)
			check_access(s, r);
		else if (r->op == OP_ESC)
			fail_operands(s, r, -1);
	}
	if (r->ndst == 1 && r->op != OP_TOP && r->op != OP_ESC &&
	    r->op != OP_LOAD && r->op != OP_STORE && r->op != OP_SETP) {
		if (!sub_of_and(s, r, &v))
			v = arith(s, r);
	}
	for (int i = 0; i < r->ndst; i++) {
		int d = s->p->dst[r->dst + i];
		struct sym y = r->ndst == 1 ? sym_of(s, r) :
			       (struct sym){ .stamp = s->stamp };

		if (i > 0)
			v = TOP;
		if (r->guard >= 0)
			v = join(&s->cur[d], &v, r->w);
		s->cur[d] = v;
		s->ver[d] = ++s->clock;
		s->sym[d] = y;
	}
}

/* Run block b from s->cur (its entry state), in place. */
static void run_block(struct solver *s, int b)
{
	s->stamp++;
	for (int i = s->p->bstart[b]; i < s->p->bstart[b + 1]; i++)
		run_ins(s, &s->p->ins[i]);
}

/* ---- solving ---- */

/* A register's value on one edge, where it differs from the block's exit. */
struct av_patch {
	int reg;
	struct av v;
};

/*
 * The registers setp r compares, narrowed on the edge where it is truth,
 * from the state st: into pt, their count returned (at most 2), or -1
 * when the edge is never taken.
 */
static int narrow(const struct solver *s, const struct av *st,
		  const struct rins *r, bool truth, struct av_patch pt[2])
{
	static const uint8_t neg[] = { C_NONE, C_NE, C_EQ, C_GE, C_GT, C_LE,
				       C_LT };
	const struct ptxr_opnd *o = &s->p->opnd[r->src];
	uint8_t c = truth ? r->cmp : neg[r->cmp];
	struct av a = opv_in(s, st, &o[0], r->w),
		  b = opv_in(s, st, &o[1], r->w);
	int n = 0;
	i128 alo, ahi, blo, bhi;

	if (a.k == AV_PTR || b.k == AV_PTR)
		return 0;
	view(&a, r->w, r->sgn, &alo, &ahi);
	view(&b, r->w, r->sgn, &blo, &bhi);
	switch (c) {
	case C_LT:
		ahi = ahi < bhi - 1 ? ahi : bhi - 1;
		blo = blo > alo + 1 ? blo : alo + 1;
		break;
	case C_LE:
		ahi = ahi < bhi ? ahi : bhi;
		blo = blo > alo ? blo : alo;
		break;
	case C_GT:
		alo = alo > blo + 1 ? alo : blo + 1;
		bhi = bhi < ahi - 1 ? bhi : ahi - 1;
		break;
	case C_GE:
		alo = alo > blo ? alo : blo;
		bhi = bhi < ahi ? bhi : ahi;
		break;
	case C_EQ:
		alo = blo = alo > blo ? alo : blo;
		ahi = bhi = ahi < bhi ? ahi : bhi;
		break;
	case C_NE:
		if (blo == bhi && alo == blo)
			alo++;
		if (blo == bhi && ahi == blo)
			ahi--;
		if (alo == ahi && blo == alo)
			blo++;
		if (alo == ahi && bhi == alo)
			bhi--;
		break;
	default:
		return 0;
	}
	if (alo > ahi || blo > bhi)
		return -1;	/* the edge is never taken */
	if (o[0].kind == PTXR_O_REG && o[1].kind == PTXR_O_REG &&
	    o[0].reg == o[1].reg)
		return 0;
	if (o[0].kind == PTXR_O_REG)
		pt[n++] = (struct av_patch){ o[0].reg, norm(alo, ahi, r->w) };
	if (o[1].kind == PTXR_O_REG)
		pt[n++] = (struct av_patch){ o[1].reg, norm(blo, bhi, r->w) };
	return n;
}

/* An induction variable's step in s->cur, the loop's entry state: 0 when
 * not one known constant. */
static int64_t iv_step(const struct solver *s, const struct ivar *v, int w)
{
	struct av a = opv(s, &v->step, w);
	i128 lo, hi;

	if (a.k != AV_INT)
		return 0;
	view(&a, w, true, &lo, &hi);
	if (lo != hi || lo < -RANGE_OFF_MAX || lo > RANGE_OFF_MAX)
		return 0;
	return v->neg ? -(int64_t)lo : (int64_t)lo;
}

/* Iterations a loop's back edge can take, -1 when unknown. */
static int64_t trips(struct solver *s, const struct loop *l)
{
	const struct ltest *t = &l->test;
	const struct ivar *v = &s->p->iv[t->iv];
	struct av init = s->cur[v->reg], first, bound;
	int64_t step = iv_step(s, v, t->w);
	i128 flo, fhi, blo, bhi, n, vmin, vmax;

	if (!l->has_test || init.k != AV_INT || step == 0)
		return -1;
	first = norm((i128)init.lo + step, (i128)init.hi + step, t->w);
	bound = opv(s, &t->bound, t->w);
	if (first.k != AV_INT || bound.k != AV_INT)
		return -1;
	view(&first, t->w, t->sgn, &flo, &fhi);
	view(&bound, t->w, t->sgn, &blo, &bhi);
	vmin = t->sgn ? -pow2(8 * t->w - 1) : 0;
	vmax = t->sgn ? pow2(8 * t->w - 1) - 1 : pow2(8 * t->w) - 1;
	if (step > 0) {
		i128 last;	/* the largest value that goes on */

		if (t->cmp == C_LT || (t->cmp == C_NE && step == 1 &&
				       fhi <= blo))
			last = bhi - 1;
		else if (t->cmp == C_LE)
			last = bhi;
		else
			return -1;
		/* Going on from last must not wrap past the bound. */
		if (last + step > vmax)
			return -1;
		if (flo > last)
			return 0;
		n = (last - flo) / step + 1;
	} else {
		i128 last;

		if (t->cmp == C_GT || (t->cmp == C_NE && step == -1 &&
				       flo >= bhi))
			last = blo + 1;
		else if (t->cmp == C_GE)
			last = blo;
		else
			return -1;
		if (last + step < vmin)
			return -1;
		if (fhi < last)
			return 0;
		n = (fhi - last) / -step + 1;
	}
	return n > RANGE_TRIPS_MAX ? -1 : (int64_t)n;
}

/* At the header of l, s->cur holding the join of its entry edges only:
 * each induction variable's values over the loop, into iv[]. */
static void loop_values(struct solver *s, const struct loop *l,
			struct av *iv)
{
	int64_t n = trips(s, l);

	for (int k = 0; k < l->niv; k++) {
		const struct ivar *v = &s->p->iv[l->iv0 + k];
		struct av a = s->cur[v->reg];
		int w = v->w;
		int64_t step = iv_step(s, v, w);
		i128 span = (i128)step * n;
		i128 dlo = span < 0 ? span : 0, dhi = span > 0 ? span : 0;

		iv[k] = TOP;
		if (n < 0 || step == 0 || (a.k != AV_INT && a.k != AV_PTR))
			continue;
		if (a.k == AV_PTR)
			iv[k] = ptr(&a, dlo, dhi);
		else
			iv[k] = norm(a.lo + dlo, a.hi + dhi, w);
	}
}

/* acc[r] joined with src[r] for every register (copied when !any). */
static void join_state(const struct ptxr_prog *p, struct av *acc,
		       const struct av *src, int nreg, bool any)
{
	if (!any) {
		memcpy(acc, src, (size_t)nreg * sizeof(*acc));
		return;
	}
	/* TOP joined with anything is TOP: most registers, most passes. */
	for (int r = 0; r < nreg; r++)
		if (acc[r].k != AV_TOP)
			acc[r] = join(&acc[r], &src[r], p->rw[r] ? p->rw[r] : 8);
}

/* Join pred's exit state, narrowed along pred -> b, into acc, and into
 * ent too when ent is given (an entry edge). */
static void join_edge(struct solver *s, int pred, int b, struct av *acc,
		      bool *any, struct av *ent, bool *anyent)
{
	const struct ptxr_prog *p = s->p;
	int set = p->refine[pred];
	const struct av *src = &s->out[(size_t)pred * s->nreg];
	struct av_patch pt[2];
	struct av oacc[2], oent[2];
	int npt = 0;

	/*
	 * The edge's state is pred's exit but for the (at most two)
	 * registers the branch narrows: patched in after the loop, instead
	 * of a copy of every register for every branch edge on every pass.
	 */
	if (set >= 0 && p->succ[2 * pred] != p->succ[2 * pred + 1]) {
		const struct rins *br = &p->ins[p->bstart[pred + 1] - 1];
		bool taken = p->succ[2 * pred] == b;
		bool truth = taken != (bool)br->guard_neg;

		npt = narrow(s, src, &p->ins[set], truth, pt);
		if (npt < 0)
			return;
		for (int k = 0; k < npt; k++) {
			oacc[k] = acc[pt[k].reg];
			if (ent)
				oent[k] = ent[pt[k].reg];
		}
	}
	join_state(p, acc, src, s->nreg, *any);
	if (ent)
		join_state(p, ent, src, s->nreg, *anyent);
	for (int k = 0; k < npt; k++) {
		int r = pt[k].reg, w = p->rw[r] ? p->rw[r] : 8;

		acc[r] = *any ? join(&oacc[k], &pt[k].v, w) : pt[k].v;
		if (ent)
			ent[r] = *anyent ? join(&oent[k], &pt[k].v, w) :
					   pt[k].v;
	}
	*any = true;
	if (ent)
		*anyent = true;
}

/*
 * Block b's entry state from its predecessors' exits (acc; ent is
 * scratch), induction variables from their trip counts.  widen: the
 * ascending phase, where a header's values that keep changing go to TOP.
 * Returns whether b's state changed (and b ran again).
 */
static bool visit(struct solver *s, int b, bool widen, struct av *acc,
		  struct av *ent, struct av *ivv)
{
	const struct ptxr_prog *p = s->p;
	size_t nr = (size_t)s->nreg;
	int li = p->loop_of[b];
	const struct loop *l = li >= 0 ? &p->loop[li] : NULL;
	struct av *in = &s->in[(size_t)b * nr], *cur;
	bool any = false, anyent = false, differs;
	uint64_t sig = 0;

	/*
	 * The same predecessor exits in the same phase give the same entry
	 * state, and the last visit left in[] equal to it: widening there
	 * set TOP where the entry still differs, and would again (visits
	 * only grew).  So nothing can change; skip the joins and copies.
	 */
	for (int e = p->pred0[b]; e < p->pred0[b + 1]; e++)
		sig += s->outver[p->preds[e]];
	if (s->reach[b] && s->insig[b] == sig && s->inwiden[b] == widen)
		return false;
	s->insig[b] = sig;
	s->inwiden[b] = widen;
	if (b == 0) {
		for (size_t i = 0; i < nr; i++)
			acc[i] = TOP;
		any = true;
	}
	for (int e = p->pred0[b]; e < p->pred0[b + 1]; e++) {
		int q = p->preds[e];

		if (!s->ran[q])
			continue;
		/* Entry edges feed ent too (loop headers' initial values). */
		join_edge(s, q, b, acc, &any, p->back[e] ? NULL : ent,
			  &anyent);
	}
	if (!any) {
		differs = s->reach[b];
		if (s->ran[b])
			s->outver[b]++;
		s->reach[b] = s->ran[b] = 0;
		return differs;
	}
	/* What the loop never assigns is what it was on entry: the back
	 * edges would only carry old, wider values around. */
	if (l && l->reducible && anyent)
		for (size_t i = 0; i < nr; i++)
			if (!l->defd[i])
				acc[i] = ent[i];
	if (l && l->niv && l->latch >= 0 && l->reducible && anyent) {
		memcpy(s->cur, ent, nr * sizeof(*ent));
		loop_values(s, l, ivv);
		/* Bounded by the trip count: no widening.  Unbounded
		 * integers join and widen. */
		for (int v = 0; v < l->niv; v++) {
			int reg = p->iv[l->iv0 + v].reg;

			if (ivv[v].k != AV_TOP || acc[reg].k == AV_PTR)
				acc[reg] = ivv[v];
			s->pinned[reg] = ivv[v].k != AV_TOP;
		}
	}
	differs = !s->reach[b];
	for (size_t i = 0; i < nr; i++) {
		if (!s->reach[b] || av_eq(&in[i], &acc[i]))
			continue;
		if (widen && l && s->visits[b] >= RANGE_WIDEN_AFTER &&
		    !s->pinned[i])
			acc[i] = TOP;
		differs |= !av_eq(&in[i], &acc[i]);
	}
	if (l)
		for (int v = 0; v < l->niv; v++)
			s->pinned[p->iv[l->iv0 + v].reg] = 0;
	if (!differs)
		return false;
	s->visits[b]++;
	memcpy(in, acc, nr * sizeof(*acc));
	s->reach[b] = 1;
	/* Run in place in b's exit state: one copy fewer per visit. */
	cur = s->cur;
	s->cur = &s->out[(size_t)b * nr];
	memcpy(s->cur, in, nr * sizeof(*in));
	run_block(s, b);
	s->cur = cur;
	s->ran[b] = 1;
	s->outver[b]++;
	return true;
}

/*
 * Ascend with widening to a post-fixpoint, then descend a few passes
 * without it: each descending pass stays above the least fixpoint (the
 * transfer is monotone) and wins back what widening lost where a branch
 * bounds the value, as loop conditions do.
 */
static int solve(struct solver *s)
{
	const struct ptxr_prog *p = s->p;
	size_t nr = (size_t)s->nreg;
	struct av *acc = malloc(nr * sizeof(*acc));
	struct av *ent = malloc(nr * sizeof(*ent));
	struct av *ivv = malloc(((size_t)p->niv + 1) * sizeof(*ivv));
	bool changed = true;
	int pass, r = -ENOMEM;

	if (!acc || !ent || !ivv)
		goto out;
	for (pass = 0; changed && pass < RANGE_PASSES_MAX; pass++) {
		changed = false;
		for (int k = 0; k < p->nrpo; k++)
			changed |= visit(s, p->rpo[k], true, acc, ent, ivv);
	}
	r = -E2BIG;
	if (changed)
		goto out;
	for (pass = 0; pass < RANGE_NARROW_PASSES; pass++) {
		changed = false;
		for (int k = 0; k < p->nrpo; k++)
			changed |= visit(s, p->rpo[k], false, acc, ent, ivv);
		if (!changed)
			break;
	}
	r = 0;
out:
	free(acc);
	free(ent);
	free(ivv);
	return r;
}

int ptxr_solve(const struct ptxr_prog *p, const struct ptxr_geom *g,
	       uint64_t *has, int64_t *lo, int64_t *hi)
{
	struct solver s = { .p = p, .g = g };
	size_t cells;
	int r = -ENOMEM;

	*has = 0;
	if (!p || !p->cand || p->bad || !p->nblk)
		return 0;
	for (int d = 0; d < 3; d++)
		if (!g->grid[d] || !g->block[d])
			return 0;
	s.nreg = p->nreg;
	cells = (size_t)p->nblk * (size_t)p->nreg;
	if (cells > RANGE_CELLS_MAX)
		return -E2BIG;
	s.in = calloc(cells, sizeof(*s.in));
	s.out = calloc(cells, sizeof(*s.out));
	s.cur = calloc((size_t)p->nreg, sizeof(*s.cur));
	s.reach = calloc((size_t)p->nblk, 1);
	s.ran = calloc((size_t)p->nblk, 1);
	s.visits = calloc((size_t)p->nblk, sizeof(int));
	s.ver = calloc((size_t)p->nreg, sizeof(*s.ver));
	s.sym = calloc((size_t)p->nreg, sizeof(*s.sym));
	s.pinned = calloc((size_t)p->nreg, 1);
	s.outver = calloc((size_t)p->nblk, sizeof(*s.outver));
	s.insig = calloc((size_t)p->nblk, sizeof(*s.insig));
	s.inwiden = calloc((size_t)p->nblk, 1);
	if (!s.in || !s.out || !s.cur || !s.reach || !s.ran || !s.visits ||
	    !s.ver || !s.sym || !s.pinned || !s.outver || !s.insig ||
	    !s.inwiden)
		goto out;
	r = solve(&s);
	if (r < 0)
		goto out;
	/* The check: every reachable instruction once more, at the fixpoint. */
	s.check = true;
	for (int k = 0; k < p->nrpo; k++) {
		int b = p->rpo[k];

		if (!s.reach[b])
			continue;
		memcpy(s.cur, &s.in[(size_t)b * s.nreg],
		       (size_t)s.nreg * sizeof(*s.cur));
		run_block(&s, b);
	}
	*has = p->cand & s.seen & ~s.fail;
	for (int j = 0; j < PTXR_MAX_PARAMS; j++)
		if (*has >> j & 1) {
			lo[j] = s.lo[j];
			hi[j] = s.hi[j];
		}
out:
	free(s.in);
	free(s.out);
	free(s.cur);
	free(s.reach);
	free(s.ran);
	free(s.visits);
	free(s.ver);
	free(s.sym);
	free(s.pinned);
	free(s.outver);
	free(s.insig);
	free(s.inwiden);
	return r;
}
