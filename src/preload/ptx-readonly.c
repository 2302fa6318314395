/*
 * ptx-readonly.c - which kernel parameters a PTX .entry provably never
 * writes through, and where the PTX is inside a module image.
 *
 * Owns the PTX scanner (comments, strings, braces, statements), the
 * per-entry taint analysis and the fatbin container walk.
 *
 * The analysis is flow-insensitive, which only ever over-approximates: a
 * register's taint is the set of parameters any assignment anywhere in the
 * body may derive it from, iterated to a fixpoint.  One extra "memory" taint
 * stands for every value the kernel stored: every load that is not a
 * parameter load yields it, so a pointer parked in local (or any) memory
 * and loaded back keeps its parameters.  A parameter is written when its
 * taint reaches the address of a store, atomic, reduction or copy
 * destination, when it is stored anywhere but thread-local memory or passed
 * to a call (it escapes), when its address is taken, or when any
 * instruction this file does not know touches it.  Anything in a body that
 * the scanner does not understand clears the whole entry's verdict.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ptx-readonly.h"
#include "ptx-range.h"
#include "ptx-text.h"
#include "codec-dl.h"

#define ALL_PARAMS (~(uint64_t)0)
#define FIXPOINT_PASSES_MAX 256	/* more: give up on the entry */
#define ENTRY_PARAMS_MAX 4096	/* more: not a kernel any driver loads */
#define OPERANDS_MAX 64		/* per instruction */
#define FATBIN_MAGIC 0xba55ed50u
#define FATBIN_WRAPPER_MAGIC 0x466243b1u
#define FATBIN_KIND_PTX 1
#define FATBIN_SIZE_MAX ((uint64_t)1 << 31)
/* Observed in CUDA 13's fatbinary: entry flags naming the codec. */
#define FATBIN_FLAG_LZ4 0x2000u
#define FATBIN_FLAG_ZSTD 0x8000u
/* PTX text larger than this after decompression is not believed. */
#define FATBIN_PTX_MAX ((uint64_t)256 << 20)

/* Instruction classes. */
enum ins_class {
	INS_PURE,	/* registers in, registers out */
	INS_LOAD,	/* dsts <- memory */
	INS_LDPARAM,	/* dsts <- parameter bits (const_bits) */
	INS_STORE,	/* address written, value escapes */
	INS_STLOCAL,	/* value goes to memory only */
	INS_ESCAPE,	/* every operand written (atomics, calls, st.param) */
	INS_COPY,	/* operand 0 written, the rest read */
	INS_UNKNOWN,	/* every operand written, dsts <- everything */
};

struct ins {
	uint8_t cls;
	int dst, ndst;		/* into the register index pool */
	int src, nsrc;
	int adr, nadr;		/* address registers (stores, copies) */
	uint64_t src_bits;	/* params named outside a parameter load */
	uint64_t adr_bits;
	/* For extents (X_*): what the instruction does to an address. */
	uint8_t xop;
	uint8_t xglobal;	/* X_MEM: .global, else generic */
	int xparam;		/* X_PARAM: the parameter loaded */
	int xreg;		/* X_MOV/X_ADD/X_CVTA source, X_MEM address */
	int xdst;		/* X_PARAM/X_MOV/X_ADD/X_CVTA destination */
	uint32_t xwidth;	/* X_MEM: bytes accessed */
	int64_t ximm;		/* X_ADD: the constant; X_MEM: the offset */
};

/* struct ins.xop */
enum {
	X_NONE,		/* anything else */
	X_PARAM,	/* ld.param.{u,b,s}64 %rd, [param] of an 8-byte param */
	X_MOV,		/* mov.{u,b,s}64 %rd, %rd */
	X_ADD,		/* add.{u,s}64 %rd, %rd, constant */
	X_CVTA,		/* cvta.to.global.u64 %rd, %rd */
	X_MEM,		/* ld/st/atom/red, global or generic, [%rd+constant] */
};

/* Offsets beyond this are not believed (no overflow in the sums). */
#define X_IMM_MAX ((int64_t)1 << 40)

struct reg {
	const char *name;
	size_t len;
	uint64_t taint;
};

/* Per-entry analysis state. */
struct body {
	/* parameter names of the entry being analysed */
	char **pname;
	size_t *plen;		/* strlen(pname[i]) */
	int np;
	/* registers: names (pointers into the text) and taint */
	struct reg *reg;
	int nreg, capreg;
	int *hslot, hcap;	/* name -> index, open addressing */
	/* register index pool for instruction operands */
	int *pool;
	int npool, cappool;
	struct ins *ins;
	int nins, capins;
	uint64_t escaped;	/* params written or escaped unconditionally */
	const uint32_t *psize;	/* parameter byte sizes (the entry's) */
	bool poisoned;		/* something not understood */
	struct ptxr_prog *rp;	/* the same body for ptx-range.c, or NULL */
	bool rp_vec_full;	/* a vector operand had too many registers */
};

/* ---- small helpers ---- */

/*
 * Character classes by table: the scanner asks for every byte of each
 * PTX text several times, and a chain of compares per byte was a fifth
 * of the instructions a module load spent here (cuRAND's PTX).
 */
enum { CC_IDENT = 1, CC_SPACE = 2, CC_BINARY = 4 };
static const unsigned char ptx_cc[256] = {
	/* \t \n \v \f \r are 9 to 13 */
	[0 ... 8] = CC_BINARY, [9 ... 13] = CC_SPACE,
	[14 ... 0x1f] = CC_BINARY, [' '] = CC_SPACE, [0x7f] = CC_BINARY,
	['a' ... 'z'] = CC_IDENT, ['A' ... 'Z'] = CC_IDENT,
	['0' ... '9'] = CC_IDENT, ['_'] = CC_IDENT, ['$'] = CC_IDENT,
	['.'] = CC_IDENT,
};

static inline bool is_ident(char c)
{
	return ptx_cc[(unsigned char)c] & CC_IDENT;
}

static inline bool is_space(char c)
{
	return ptx_cc[(unsigned char)c] & CC_SPACE;
}

/*
 * A copy of the text with comments replaced by spaces and NULs by spaces,
 * NUL-terminated; strings are kept (the scanner skips them).
 */
static char *strip_comments(const char *t, size_t len)
{
	char *o = malloc(len + 1);
	size_t i = 0;

	if (!o)
		return NULL;
	while (i < len) {
		if (t[i] == '"') {
			o[i] = t[i];
			for (i++; i < len && t[i] != '"' && t[i] != '\n'; i++)
				o[i] = t[i] ? t[i] : ' ';
			if (i < len)
				o[i] = t[i], i++;
		} else if (t[i] == '/' && i + 1 < len && t[i + 1] == '/') {
			for (; i < len && t[i] != '\n'; i++)
				o[i] = ' ';
		} else if (t[i] == '/' && i + 1 < len && t[i + 1] == '*') {
			o[i] = o[i + 1] = ' ';
			for (i += 2; i < len; i++) {
				if (t[i] == '*' && i + 1 < len && t[i + 1] == '/') {
					o[i] = o[i + 1] = ' ';
					i += 2;
					break;
				}
				o[i] = t[i] == '\n' ? '\n' : ' ';
			}
		} else {
			o[i] = t[i] ? t[i] : ' ';
			i++;
		}
	}
	o[len] = '\0';
	return o;
}

static const char *skip_space(const char *p)
{
	while (is_space(*p))
		p++;
	return p;
}

/* The identifier at p (length in *n), 0 when none. */
static size_t ident_len(const char *p)
{
	size_t n = *p == '%';

	while (is_ident(p[n]))
		n++;
	return n;
}

static bool word_is(const char *p, size_t n, const char *w)
{
	return strlen(w) == n && memcmp(p, w, n) == 0;
}

/* ---- module-scope .global and .const variables ---- */

/* Names: pointers into the stripped text, sorted for bsearch. */
struct ptx_names {
	struct ptx_name {
		const char *s;
		size_t n;
	} *name;
	int n, cap;
};

/*
 * The text's module-scope .global and .const variables and the functions
 * it defines (with a body).  A kernel that names one of the variables, or
 * calls one of the functions (or through a register) while there are any,
 * reaches memory that is in no allocation (ptxro_entry.globals and
 * .consts).  Names only: `.global` in an instruction (ld.global) is one
 * word with the opcode.
 */
struct ptx_globals {
	struct ptx_names var, cvar, fn;
	/* A declaration not understood: any name may be one of that kind. */
	bool opaque, copaque;
};

/* What a body may reach (body_vars()). */
#define VARS_GLOBAL	1u
#define VARS_CONST	2u

static int name_cmp(const void *a, const void *b)
{
	const struct ptx_name *x = a, *y = b;

	if (x->n != y->n)
		return x->n < y->n ? -1 : 1;
	return memcmp(x->s, y->s, x->n);
}

static int names_add(struct ptx_names *l, const char *p, size_t n)
{
	if (ptx_grow((void **)&l->name, &l->cap, l->n + 1,
		     sizeof(*l->name)) < 0)
		return -ENOMEM;
	l->name[l->n++] = (struct ptx_name){ .s = p, .n = n };
	return 0;
}

/* Sorted, so that names_has() can search it. */
static void names_sort(struct ptx_names *l)
{
	if (l->n > 1)
		qsort(l->name, (size_t)l->n, sizeof(*l->name), name_cmp);
}

static bool names_has(const struct ptx_names *l, const char *p, size_t n)
{
	struct ptx_name key = { .s = p, .n = n };

	return l->n && bsearch(&key, l->name, (size_t)l->n, sizeof(*l->name),
			       name_cmp);
}

/* Whether name [p, p + n) is nvcc's string literal: $str, $str$1, ... */
static bool name_is_string(const char *p, size_t n)
{
	return n >= 4 && memcmp(p, "$str", 4) == 0 && (n == 4 || p[4] == '$');
}

/* p past a '(': past its ')' (or at the ';' or NUL that cut it short). */
static const char *skip_parens(const char *p)
{
	while (*p && *p != ')' && *p != ';')
		p++;
	return *p == ')' ? p + 1 : p;
}

/*
 * The declaration after a module-scope ".global" or ".const" at p: its
 * names into l (one or a comma-separated list, each perhaps with array
 * bounds), or *opaque when it has none this understands.  Returns where to
 * go on, or NULL for -ENOMEM.
 */
static const char *globals_decl(const char *p, struct ptx_names *l,
				bool *opaque)
{
	size_t n;

	for (;;) {
		p = skip_space(p);
		n = ident_len(p);
		if (n == 0) {
			*opaque = true;
			return p;
		}
		if (*p == '.') {
			/* .attribute(...) and the like carry a list. */
			p = skip_space(p + n);
			if (*p == '(')
				p = skip_parens(p + 1);
			continue;
		}
		if (*p >= '0' && *p <= '9') {	/* .align's value */
			p += n;
			continue;
		}
		break;
	}
	for (;;) {
		if (*p == '%') {
			*opaque = true;
			return p + n;
		}
		/*
		 * String literals (printf's formats) are constant data no
		 * program may write: they order nothing.
		 */
		if (!name_is_string(p, n) && names_add(l, p, n) < 0)
			return NULL;
		p = skip_space(p + n);
		while (*p == '[') {
			while (*p && *p != ']' && *p != ';')
				p++;
			if (*p == ']')
				p = skip_space(p + 1);
		}
		if (*p != ',')
			return p;
		p = skip_space(p + 1);
		n = ident_len(p);
		if (n == 0 || *p == '.' || (*p >= '0' && *p <= '9')) {
			*opaque = true;
			return p;
		}
	}
}

/*
 * The .func at p (past the word): its name into g->fn when it has a body,
 * not only a prototype.  Returns where to go on, or NULL for -ENOMEM.
 */
static const char *globals_func(const char *p, struct ptx_globals *g)
{
	const char *name, *q;
	size_t n;

	p = skip_space(p);
	if (*p == '(')			/* the return value */
		p = skip_space(skip_parens(p + 1));
	n = ident_len(p);
	if (n == 0 || *p == '.' || *p == '%')
		return p;
	name = p;
	for (q = p + n; *q && *q != ';' && *q != '{'; q++)
		if (*q == '(')
			q = skip_parens(q + 1) - 1;
	if (*q == '{' && names_add(&g->fn, name, n) < 0)
		return NULL;
	return p + n;
}

/*
 * The next word of the stripped text at or after p, past strings, braces
 * (counted in *depth, which a stray '}' makes negative) and punctuation:
 * its start with its length in *n, or the terminating NUL with *n 0.
 */
static const char *scan_word(const char *p, int *depth, size_t *n)
{
	for (*n = 0; *p; p++) {
		if (*p == '"') {
			for (p++; *p && *p != '"'; p++)
				;
			if (!*p)
				break;
			continue;
		}
		if (*p == '{' || *p == '}') {
			*depth += *p == '{' ? 1 : -1;
			if (*depth < 0)
				return p + 1;
			continue;
		}
		/* ident_len() is not 0 exactly here; asked only then. */
		if (is_ident(*p) || *p == '%') {
			*n = ident_len(p);
			return p;
		}
	}
	return p;
}

/*
 * Every module-scope .global and .const variable and defined function of
 * the stripped text t.  Returns 0 or -ENOMEM.
 */
static int globals_collect(const char *t, struct ptx_globals *g)
{
	const char *p = t;
	int depth = 0;
	size_t n;

	while (*(p = scan_word(p, &depth, &n))) {
		if (depth == 0 && word_is(p, n, ".global"))
			p = globals_decl(p + n, &g->var, &g->opaque);
		else if (depth == 0 && word_is(p, n, ".const"))
			p = globals_decl(p + n, &g->cvar, &g->copaque);
		else if (depth == 0 && word_is(p, n, ".func"))
			p = globals_func(p + n, g);
		else
			p += n;
		if (!p)
			return -ENOMEM;
	}
	names_sort(&g->var);
	names_sort(&g->cvar);
	names_sort(&g->fn);
	return 0;
}

static void globals_release(struct ptx_globals *g)
{
	free(g->var.name);
	free(g->cvar.name);
	free(g->fn.name);
}

/*
 * Whether the call whose operands start at s (past "call" and its
 * modifiers) may reach g's variables: a function the text defines, or
 * one through a register.  An external one (vprintf, malloc) cannot name
 * them.
 */
static bool call_reaches(const struct ptx_globals *g, const char *s,
			 const char *e)
{
	size_t n;

	s = skip_space(s);
	if (s < e && *s == '(') {		/* (retval), */
		s = skip_space(skip_parens(s + 1));
		if (s < e && *s == ',')
			s = skip_space(s + 1);
	}
	if (s >= e)
		return true;
	n = ident_len(s);
	if (n == 0 || *s == '%' || n > (size_t)(e - s))
		return true;
	return names_has(&g->fn, s, n);
}

/*
 * Which kinds of g's module-scope variables the body [s, e) may reach:
 * VARS_GLOBAL, VARS_CONST.  One walk for both.
 */
static unsigned body_vars(const struct ptx_globals *g, const char *s,
			  const char *e)
{
	unsigned want = 0, got = 0;
	int depth = 0;
	size_t n;

	if (g->opaque)
		got |= VARS_GLOBAL;
	else if (g->var.n)
		want |= VARS_GLOBAL;
	if (g->copaque)
		got |= VARS_CONST;
	else if (g->cvar.n)
		want |= VARS_CONST;
	/* The body's braces balance: depth never matters here. */
	for (s = scan_word(s, &depth, &n); n && s < e && (want & ~got);
	     s = scan_word(s + n, &depth, &n)) {
		if (n > (size_t)(e - s))
			n = (size_t)(e - s);
		if (n >= 4 && memcmp(s, "call", 4) == 0 &&
		    (n == 4 || s[4] == '.')) {
			if (call_reaches(g, s + n, e))
				got |= want;
		} else if (*s != '%') {
			if ((want & VARS_GLOBAL) && names_has(&g->var, s, n))
				got |= VARS_GLOBAL;
			if ((want & VARS_CONST) && names_has(&g->cvar, s, n))
				got |= VARS_CONST;
		}
	}
	return got;
}

/*
 * Set e's globals and consts from what its body may reach (what = VARS_*).
 * A .global variable may hold a pointer to a .const one, so reaching the
 * first counts as reading the second.
 */
static void entry_set_vars(struct ptxro_entry *e, const struct ptx_globals *g,
			   unsigned what)
{
	e->globals = what & VARS_GLOBAL;
	e->consts = (what & VARS_CONST) ||
		    (e->globals && (g->cvar.n > 0 || g->copaque));
}

/* ---- module and entries ---- */

void ptxro_module_init(struct ptxro_module *m)
{
	memset(m, 0, sizeof(*m));
}

void ptxro_module_release(struct ptxro_module *m)
{
	for (int i = 0; i < m->n; i++) {
		free(m->e[i].name);
		free(m->e[i].size);
		free(m->e[i].ext);
		ptxr_unref(m->e[i].range);
	}
	free(m->e);
	for (int i = 0; i < m->nvar; i++)
		free(m->var[i].name);
	free(m->var);
	memset(m, 0, sizeof(*m));
}

/* Append the names of l to m's variables (is_const their kind). */
static int module_add_vars(struct ptxro_module *m, const struct ptx_names *l,
			   bool is_const)
{
	for (int i = 0; i < l->n; i++) {
		struct ptxro_var *v;

		if (ptx_grow((void **)&m->var, &m->capvar, m->nvar + 1,
			     sizeof(*m->var)) < 0)
			return -ENOMEM;
		v = &m->var[m->nvar];
		v->name = strndup(l->name[i].s, l->name[i].n);
		if (!v->name)
			return -ENOMEM;
		v->is_const = is_const;
		m->nvar++;
	}
	return 0;
}

static struct ptxro_entry *module_add(struct ptxro_module *m,
				      const char *name, size_t nlen)
{
	struct ptxro_entry *e;

	if (ptx_grow((void **)&m->e, &m->cap, m->n + 1, sizeof(*m->e)) < 0)
		return NULL;
	e = &m->e[m->n];
	memset(e, 0, sizeof(*e));
	e->name = strndup(name, nlen);
	if (!e->name)
		return NULL;
	m->n++;
	return e;
}

/* ---- the entry's signature ---- */

static uint32_t type_size(const char *p, size_t n)
{
	/* .u64 .b8 .f16x2 .pred ... : the digits after the letter. */
	unsigned v = 0;

	if (word_is(p, n, ".pred"))
		return 1;
	if (n < 3 || !strchr("usbf", p[1]))
		return 0;
	for (size_t i = 2; i < n && p[i] >= '0' && p[i] <= '9'; i++)
		v = v * 10 + (unsigned)(p[i] - '0');
	if (v != 8 && v != 16 && v != 32 && v != 64)
		return 0;
	return v / 8;
}

/*
 * One ".param ..." declaration of the signature, from p to the ',' or ')'
 * ending it.  Sets *name, *nlen and *size; returns the end or NULL.
 */
static const char *parse_param(const char *p, const char **name,
			       size_t *nlen, uint32_t *size)
{
	uint32_t elem = 0;
	unsigned long count = 1;
	size_t n;

	p = skip_space(p);
	n = ident_len(p);
	if (!word_is(p, n, ".param"))
		return NULL;
	p += n;
	*name = NULL;
	for (;;) {
		p = skip_space(p);
		n = ident_len(p);
		if (n == 0)
			break;
		if (p[0] == '.') {
			uint32_t s = type_size(p, n);

			if (s)
				elem = s;
			else if (word_is(p, n, ".align")) {
				p = skip_space(p + n);
				while (*p >= '0' && *p <= '9')
					p++;
				continue;
			} else if (!word_is(p, n, ".ptr") &&
				   !word_is(p, n, ".global") &&
				   !word_is(p, n, ".const") &&
				   !word_is(p, n, ".shared") &&
				   !word_is(p, n, ".local") &&
				   !word_is(p, n, ".texref") &&
				   !word_is(p, n, ".samplerref") &&
				   !word_is(p, n, ".surfref"))
				return NULL;
			/* .ptr.global.align written as one word */
			p += n;
			continue;
		}
		*name = p;
		*nlen = n;
		p += n;
		break;
	}
	if (!*name || !elem)
		return NULL;
	p = skip_space(p);
	if (*p == '[') {
		char *end;

		count = strtoul(p + 1, &end, 10);
		if (end == p + 1 || *end != ']' || count == 0 ||
		    count > 65536)
			return NULL;
		p = skip_space(end + 1);
	}
	*size = (uint32_t)(elem * count);
	if (*p != ',' && *p != ')')
		return NULL;
	return p;
}

/* ---- body: registers and operands ---- */

static uint32_t name_hash(const char *p, size_t n)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 16777619u;
	return h;
}

/* Rebuild the name hash at twice the register count or more. */
static int reg_rehash(struct body *b)
{
	int cap = b->hcap ? b->hcap * 2 : 64;
	int *slot = malloc((size_t)cap * sizeof(int));

	if (!slot)
		return -ENOMEM;
	for (int i = 0; i < cap; i++)
		slot[i] = -1;
	for (int i = 0; i < b->nreg; i++) {
		uint32_t h = name_hash(b->reg[i].name, b->reg[i].len) &
			     (uint32_t)(cap - 1);

		while (slot[h] >= 0)
			h = (h + 1) & (uint32_t)(cap - 1);
		slot[h] = i;
	}
	free(b->hslot);
	b->hslot = slot;
	b->hcap = cap;
	return 0;
}

static int reg_index(struct body *b, const char *p, size_t n)
{
	uint32_t h;

	if (2 * (b->nreg + 1) > b->hcap && reg_rehash(b) < 0)
		return -ENOMEM;
	h = name_hash(p, n) & (uint32_t)(b->hcap - 1);
	while (b->hslot[h] >= 0) {
		const struct reg *r = &b->reg[b->hslot[h]];

		if (r->len == n && memcmp(r->name, p, n) == 0)
			return b->hslot[h];
		h = (h + 1) & (uint32_t)(b->hcap - 1);
	}
	if (ptx_grow((void **)&b->reg, &b->capreg, b->nreg + 1,
		 sizeof(*b->reg)) < 0)
		return -ENOMEM;
	b->reg[b->nreg] = (struct reg){ .name = p, .len = n };
	b->hslot[h] = b->nreg;
	return b->nreg++;
}

static int param_index(const struct body *b, const char *p, size_t n)
{
	/*
	 * nvcc names them ENTRY_param_K: one long prefix, so the last byte
	 * first.
	 */
	for (int i = 0; i < b->np; i++)
		if (b->plen[i] == n && n && b->pname[i][n - 1] == p[n - 1] &&
		    memcmp(b->pname[i], p, n) == 0)
			return i;
	return -1;
}

static uint64_t param_bit(int i)
{
	return i >= 0 && i < PTXRO_MAX_PARAMS ? (uint64_t)1 << i : 0;
}

/*
 * The names in one operand [s, e): registers go to the pool (and *nreg),
 * parameter names to *bits.  *other: some other identifier was seen (a
 * label, a global, a call parameter).  Returns 0, -ENOMEM, -EINVAL.
 */
static int operand_names(struct body *b, const char *s, const char *e,
			 int *nreg, uint64_t *bits, bool *other)
{
	while (s < e) {
		size_t n;
		int r;

		if (*s == '%') {
			n = ident_len(s);
			if (s + n > e)
				n = (size_t)(e - s);
			r = reg_index(b, s, n);
			if (r < 0)
				return r;
			if (ptx_grow((void **)&b->pool, &b->cappool,
				     b->npool + 1,
				 sizeof(int)) < 0)
				return -ENOMEM;
			b->pool[b->npool++] = r;
			(*nreg)++;
			s += n;
		} else if (is_ident(*s) && !(*s >= '0' && *s <= '9') &&
			   *s != '.') {
			n = ident_len(s);
			if (s + n > e)
				n = (size_t)(e - s);
			r = param_index(b, s, n);
			if (r >= 0) {
				*bits |= param_bit(r);
				if (r >= PTXRO_MAX_PARAMS)
					*other = true;
			} else {
				*other = true;
			}
			s += n;
		} else if (*s >= '0' && *s <= '9') {
			/* numbers: 0x1F, 0f3F800000, 1.5e3, 12U */
			while (s < e && (is_ident(*s) || *s == '+' ||
					 *s == '-'))
				if ((*s == '+' || *s == '-') &&
				    s[-1] != 'e' && s[-1] != 'E')
					break;
				else
					s++;
		} else if (strchr(" \t\n\r[]{}()+-|!,_<>", *s) || *s == '.') {
			s++;
		} else {
			return -EINVAL;
		}
	}
	return 0;
}

/* Split [s, e) at top-level commas; at most max pieces. */
static int split_operands(const char *s, const char *e, const char **ps,
			  const char **pe, int max)
{
	int n = 0, depth = 0;
	const char *start = s;

	s = skip_space(s);
	if (s >= e)
		return 0;
	start = s;
	for (; s <= e; s++) {
		if (s == e || (*s == ',' && depth == 0)) {
			if (n == max)
				return -EINVAL;
			ps[n] = start;
			pe[n] = s;
			n++;
			start = s + 1;
			if (s == e)
				break;
			continue;
		}
		if (*s == '[' || *s == '{' || *s == '(')
			depth++;
		else if (*s == ']' || *s == '}' || *s == ')')
			if (--depth < 0)
				return -EINVAL;
	}
	return depth ? -EINVAL : n;
}

/* Lengths with the words: is_pure() runs for every instruction. */
#define PURE_OP(w) { w, sizeof(w) - 1 }
static const struct pure_op {
	const char *w;
	size_t n;
} pure_ops[] = {
	PURE_OP("abs"), PURE_OP("activemask"), PURE_OP("add"), PURE_OP("addc"),
	PURE_OP("and"), PURE_OP("bar"), PURE_OP("barrier"), PURE_OP("bfe"),
	PURE_OP("bfi"), PURE_OP("bfind"), PURE_OP("bra"), PURE_OP("brev"),
	PURE_OP("clz"), PURE_OP("cnot"), PURE_OP("copysign"), PURE_OP("cos"),
	PURE_OP("cvt"), PURE_OP("cvta"), PURE_OP("div"), PURE_OP("dp2a"),
	PURE_OP("dp4a"), PURE_OP("ex2"), PURE_OP("exit"), PURE_OP("fence"),
	PURE_OP("fma"), PURE_OP("fns"), PURE_OP("isspacep"), PURE_OP("lg2"),
	PURE_OP("lop3"), PURE_OP("mad"), PURE_OP("mad24"), PURE_OP("madc"),
	PURE_OP("mapa"), PURE_OP("match"), PURE_OP("max"), PURE_OP("membar"),
	PURE_OP("min"), PURE_OP("mma"), PURE_OP("mov"), PURE_OP("mul"),
	PURE_OP("mul24"), PURE_OP("nanosleep"), PURE_OP("neg"), PURE_OP("not"),
	PURE_OP("or"), PURE_OP("popc"), PURE_OP("prmt"), PURE_OP("rcp"),
	PURE_OP("redux"), PURE_OP("rem"), PURE_OP("ret"), PURE_OP("rsqrt"),
	PURE_OP("sad"), PURE_OP("selp"), PURE_OP("set"), PURE_OP("setp"),
	PURE_OP("shf"), PURE_OP("shfl"), PURE_OP("shl"), PURE_OP("shr"),
	PURE_OP("sin"), PURE_OP("slct"), PURE_OP("sqrt"), PURE_OP("sub"),
	PURE_OP("subc"), PURE_OP("szext"), PURE_OP("tanh"), PURE_OP("testp"),
	PURE_OP("trap"), PURE_OP("vote"), PURE_OP("xor"),
};

static bool is_pure(const char *op, size_t n)
{
	for (size_t i = 0; i < sizeof(pure_ops) / sizeof(pure_ops[0]); i++)
		if (pure_ops[i].n == n && pure_ops[i].w[0] == *op &&
		    memcmp(op, pure_ops[i].w, n) == 0)
			return true;
	return false;
}

/* Whether the address operand's base register is the local stack. */
static bool addr_is_stack(const char *s, const char *e)
{
	s = skip_space(s);
	if (*s != '[')
		return false;
	s = skip_space(s + 1);
	return (e - s >= 4 && memcmp(s, "%SPL", 4) == 0 && !is_ident(s[4])) ||
	       (e - s >= 3 && memcmp(s, "%SP", 3) == 0 && !is_ident(s[3]));
}

/* Operands [from, to) into the pool; their count and param bits. */
static int collect(struct body *b, const char **ps, const char **pe,
		   int from, int to, int *first, int *n, uint64_t *bits,
		   bool *other)
{
	*first = b->npool;
	*n = 0;
	for (int i = from; i < to; i++) {
		int r = operand_names(b, ps[i], pe[i], n, bits, other);

		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- extents: recognising constant-offset address arithmetic ---- */

/* [s, e) without surrounding white space. */
static void trim(const char **s, const char **e)
{
	while (*s < *e && is_space(**s))
		(*s)++;
	while (*e > *s && is_space((*e)[-1]))
		(*e)--;
}

/* A decimal or 0x integer, optionally negative, |v| <= X_IMM_MAX. */
static bool parse_imm(const char *s, const char *e, int64_t *v)
{
	bool neg = false, hex = false;
	uint64_t x = 0;

	trim(&s, &e);
	if (s < e && *s == '-') {
		neg = true;
		s++;
	}
	if (e - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		hex = true;
		s += 2;
	}
	if (s >= e)
		return false;
	for (; s < e; s++) {
		unsigned d;

		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (hex && *s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (hex && *s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			return false;
		x = x * (hex ? 16 : 10) + d;
		if (x > (uint64_t)X_IMM_MAX)
			return false;
	}
	*v = neg ? -(int64_t)x : (int64_t)x;
	return true;
}

/* The operand is exactly one register: its index, or -1. */
static int single_reg(struct body *b, const char *s, const char *e)
{
	size_t n;

	trim(&s, &e);
	if (s >= e || *s != '%')
		return -1;
	n = ident_len(s);
	if (s + n != e)
		return -1;
	return reg_index(b, s, n);
}

/*
 * "[%reg]", "[%reg+c]", "[%reg+-c]", "[%reg-c]": the register's index and
 * c, else -1.
 */
static int parse_addr(struct body *b, const char *s, const char *e,
		      int64_t *off)
{
	const char *r;
	size_t n;

	trim(&s, &e);
	if (e - s < 3 || *s != '[' || e[-1] != ']')
		return -1;
	s = skip_space(s + 1);
	e--;
	if (*s != '%')
		return -1;
	r = s;
	n = ident_len(s);
	if (r + n > e)
		return -1;
	s = skip_space(s + n);
	*off = 0;
	if (s < e) {
		bool minus = *s == '-';

		if (*s != '+' && *s != '-')
			return -1;
		s = skip_space(s + 1);
		if (!parse_imm(s, e, off))
			return -1;
		if (minus) {
			if (*off < 0)
				return -1;	/* "--c" is not PTX */
			*off = -*off;
		}
	}
	return reg_index(b, r, n);
}

/* Bytes of one type component (".f32" -> 4), 0 when not a data type. */
static uint32_t x_type_width(const char *p, size_t n)
{
	static const struct {
		const char *name;
		uint32_t w;
	} t[] = {
		{ ".b8", 1 }, { ".s8", 1 }, { ".u8", 1 },
		{ ".b16", 2 }, { ".s16", 2 }, { ".u16", 2 }, { ".f16", 2 },
		{ ".bf16", 2 },
		{ ".b32", 4 }, { ".s32", 4 }, { ".u32", 4 }, { ".f32", 4 },
		{ ".f16x2", 4 }, { ".bf16x2", 4 },
		{ ".b64", 8 }, { ".s64", 8 }, { ".u64", 8 }, { ".f64", 8 },
		{ ".b128", 16 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (word_is(p, n, t[i].name))
			return t[i].w;
	return 0;
}

/*
 * Components that change neither the address nor the width of an access
 * (ordering, scope, cache and eviction hints, the atomic operation).
 */
static bool x_harmless(const char *p, size_t n)
{
	static const char *const ok[] = {
		".weak", ".volatile", ".relaxed", ".acquire", ".release",
		".sys", ".gpu", ".cta", ".ca", ".cg", ".cs", ".lu", ".cv",
		".wb", ".wt", ".nc", ".add", ".inc", ".dec", ".min", ".max",
		".and", ".or", ".xor", ".exch", ".cas", ".noftz",
	};

	if (n > 5 && (memcmp(p, ".L1::", 5) == 0 ||
		      memcmp(p, ".L2::", 5) == 0))
		return true;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (word_is(p, n, ok[i]))
			return true;
	return false;
}

/*
 * Width and state space of a load, store, atomic or reduction from its
 * opcode components after the base name: exactly one data type, at most
 * one vector count, .global or no space (generic), every other component
 * harmless.  0 when anything else is there.
 */
static uint32_t x_mem_width(const char *op, size_t oplen, size_t base,
			    uint8_t *global)
{
	uint32_t w = 0, vec = 1;
	size_t i = base;

	*global = 0;
	while (i < oplen) {
		size_t j = i + 1, n;
		uint32_t tw;

		while (j < oplen && op[j] != '.')
			j++;
		n = j - i;
		if ((tw = x_type_width(op + i, n))) {
			if (w)
				return 0;
			w = tw;
		} else if (word_is(op + i, n, ".v2") ||
			   word_is(op + i, n, ".v4") ||
			   word_is(op + i, n, ".v8")) {
			if (vec != 1)
				return 0;
			vec = (uint32_t)(op[i + 2] - '0');
		} else if (word_is(op + i, n, ".global")) {
			*global = 1;
		} else if (!x_harmless(op + i, n)) {
			return 0;
		}
		i = j;
	}
	return w * vec;
}

/*
 * The instruction's part in the extents analysis (struct ins.x*); X_NONE
 * leaves every parameter it touches without an extent.
 */
static int x_classify(struct body *b, struct ins *in, const char *op,
		      size_t oplen, size_t base, const char **ps,
		      const char **pe, int nops)
{
	int d, r, ai = -1;
	int64_t v;

	in->xop = X_NONE;
	if (word_is(op, base, "ld") && in->cls == INS_LDPARAM && nops == 2 &&
	    (word_is(op, oplen, "ld.param.u64") ||
	     word_is(op, oplen, "ld.param.b64") ||
	     word_is(op, oplen, "ld.param.s64"))) {
		const char *s = ps[1], *e = pe[1];
		size_t n;
		int i;

		trim(&s, &e);
		if (e - s < 3 || *s != '[' || e[-1] != ']')
			return 0;
		s = skip_space(s + 1);
		n = ident_len(s);
		i = n ? param_index(b, s, n) : -1;
		s = skip_space(s + n);
		if (s < e - 1) {	/* "+0" only: the whole pointer */
			if (*s != '+' || !parse_imm(s + 1, e - 1, &v) || v)
				return 0;
		}
		d = single_reg(b, ps[0], pe[0]);
		if (i < 0 || i >= PTXRO_MAX_PARAMS || b->psize[i] != 8 ||
		    d < 0)
			return d == -ENOMEM ? d : 0;
		in->xop = X_PARAM;
		in->xparam = i;
		in->xdst = d;
		return 0;
	}
	if (in->cls == INS_PURE && nops >= 2) {
		bool mov = word_is(op, oplen, "mov.u64") ||
			   word_is(op, oplen, "mov.b64") ||
			   word_is(op, oplen, "mov.s64");
		bool add = word_is(op, oplen, "add.u64") ||
			   word_is(op, oplen, "add.s64");
		bool cvta = word_is(op, oplen, "cvta.to.global.u64");

		if (!mov && !add && !cvta)
			return 0;
		if ((add && nops != 3) || (!add && nops != 2))
			return 0;
		d = single_reg(b, ps[0], pe[0]);
		r = single_reg(b, ps[1], pe[1]);
		if (d == -ENOMEM || r == -ENOMEM)
			return -ENOMEM;
		if (d < 0 || r < 0)
			return 0;
		if (add && !parse_imm(ps[2], pe[2], &in->ximm))
			return 0;
		in->xop = mov ? X_MOV : add ? X_ADD : X_CVTA;
		in->xdst = d;
		in->xreg = r;
		return 0;
	}
	if (word_is(op, base, "ld") || word_is(op, base, "ldu") ||
	    word_is(op, base, "atom"))
		ai = 1;
	else if (word_is(op, base, "st") || word_is(op, base, "red"))
		ai = 0;
	if (ai < 0 || ai >= nops)
		return 0;
	in->xwidth = x_mem_width(op, oplen, base, &in->xglobal);
	if (!in->xwidth)
		return 0;
	r = parse_addr(b, ps[ai], pe[ai], &in->ximm);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return 0;
	in->xop = X_MEM;
	in->xreg = r;
	return 0;
}

/* The special register at [s, e) ("%tid.x"), PTXR_S_OTHER if unknown. */
static uint8_t range_spec(const char *s, size_t n)
{
	static const char *const dims[] = { "%tid.", "%ntid.", "%ctaid.",
					    "%nctaid." };

	for (int d = 0; d < 4; d++) {
		size_t l = strlen(dims[d]);

		if (n == l + 1 && memcmp(s, dims[d], l) == 0 &&
		    s[l] >= 'x' && s[l] <= 'z')
			return (uint8_t)(PTXR_S_TID + 3 * d + (s[l] - 'x'));
	}
	if (word_is(s, n, "%laneid"))
		return PTXR_S_LANEID;
	if (word_is(s, n, "WARP_SZ"))
		return PTXR_S_WARPSZ;
	return PTXR_S_OTHER;
}

/* One operand for ptx-range.c.  Returns 0 or -ENOMEM. */
static int range_opnd(struct body *b, const char *s, const char *e,
		      struct ptxr_opnd *o)
{
	int64_t v;
	size_t n;
	int r;

	trim(&s, &e);
	*o = (struct ptxr_opnd){ .kind = PTXR_O_OTHER, .reg = -1 };
	if (s >= e)
		return 0;
	if (*s == '[') {
		r = parse_addr(b, s, e, &v);
		if (r == -ENOMEM)
			return r;
		if (r >= 0) {
			*o = (struct ptxr_opnd){ .kind = PTXR_O_ADDR, .reg = r,
						 .imm = v };
			return 0;
		}
		/* [name] or [name+c]: a parameter, or a symbol's memory. */
		s = skip_space(s + 1);
		n = ident_len(s);
		if (n && *s != '%') {
			const char *t = skip_space(s + n);
			int i = param_index(b, s, n);

			v = 0;
			if (*t == '+' && !parse_imm(t + 1, e - 1, &v))
				return 0;
			if (*t != '+' && *t != ']')
				return 0;
			*o = (struct ptxr_opnd){ .kind = i >= 0 ? PTXR_O_PARAM :
							PTXR_O_ADDR,
						 .reg = i, .imm = v };
		}
		return 0;
	}
	if (*s == '%' || word_is(s, (size_t)(e - s), "WARP_SZ")) {
		n = ident_len(s);
		if (s + n != e)
			return 0;
		if (memchr(s, '.', n) || *s != '%') {
			o->kind = PTXR_O_SPEC;
			o->spec = range_spec(s, n);
			return 0;
		}
		r = reg_index(b, s, n);
		if (r < 0)
			return r;
		*o = (struct ptxr_opnd){ .kind = PTXR_O_REG, .reg = r };
		return 0;
	}
	if (parse_imm(s, e, &v))
		*o = (struct ptxr_opnd){ .kind = PTXR_O_IMM, .reg = -1,
					 .imm = v };
	return 0;
}

/* The registers of a vector operand [s, e) into vec (*n so far). */
static int range_vec(struct body *b, const char *s, const char *e, int *vec,
		     int *n)
{
	while (s < e && *n < OPERANDS_MAX) {
		size_t len;
		int r;

		if (*s != '%') {
			s++;
			continue;
		}
		len = ident_len(s);
		if (s + len > e)
			len = (size_t)(e - s);
		r = reg_index(b, s, len);
		if (r < 0)
			return r;
		vec[(*n)++] = r;
		s += len;
	}
	/* More than fit: the rest unnamed, so nothing is proven. */
	if (s < e && memchr(s, '%', (size_t)(e - s)))
		b->rp_vec_full = true;
	return 0;
}

/* Hand instruction in (parsed from op and its operands) to ptx-range.c. */
static int range_add(struct body *b, const struct ins *in, const char *op,
		     size_t oplen, const char **ps, const char **pe, int nops,
		     int guard, bool guard_neg)
{
	struct ptxr_opnd src[OPERANDS_MAX];
	int dst[OPERANDS_MAX], vec[OPERANDS_MAX];
	struct ptxr_desc d = { .op = op, .oplen = oplen, .dst = dst,
			       .src = src, .guard = guard,
			       .guard_neg = guard_neg };
	int first = 0, r;

	if (!b->rp)
		return 0;
	switch (in->cls) {
	case INS_PURE:
		d.kind = PTXR_K_PURE;
		break;
	case INS_LOAD:
		d.kind = PTXR_K_LOAD;
		break;
	case INS_LDPARAM:
		d.kind = PTXR_K_LDPARAM;
		break;
	case INS_STORE:
		d.kind = PTXR_K_STORE;
		break;
	case INS_ESCAPE:
		d.kind = in->xop == X_MEM || in->nadr ? PTXR_K_STORE :
							PTXR_K_OTHER;
		break;
	default:
		d.kind = PTXR_K_OTHER;
		break;
	}
	if (word_is(op, oplen, "call") || (oplen > 5 &&
					   memcmp(op, "call.", 5) == 0))
		d.kind = PTXR_K_OTHER;
	if (in->xop == X_MEM) {
		d.mem_width = in->xwidth;
		d.mem_global = in->xglobal;
	}
	/* Destinations: what the readonly pass took as defined. */
	if (in->cls == INS_PURE || in->cls == INS_LOAD ||
	    in->cls == INS_LDPARAM ||
	    ((in->cls == INS_ESCAPE || in->cls == INS_UNKNOWN) && in->ndst)) {
		for (int i = 0; i < in->ndst && i < OPERANDS_MAX; i++)
			dst[d.ndst++] = b->pool[in->dst + i];
		first = nops ? 1 : 0;
	}
	if (word_is(op, oplen, "bra") || word_is(op, oplen, "bra.uni")) {
		const char *t = ps[0], *te = pe[0];

		if (nops != 1)
			return 0;
		trim(&t, &te);
		d.target = t;
		d.tlen = (size_t)(te - t);
		first = 1;
		d.ndst = 0;
	}
	for (int i = first; i < nops; i++) {
		r = range_opnd(b, ps[i], pe[i], &src[d.nsrc++]);
		if (r < 0)
			return r;
		if (memchr(ps[i], '{', (size_t)(pe[i] - ps[i]))) {
			r = range_vec(b, ps[i], pe[i], vec, &d.nvec);
			if (r < 0)
				return r;
		}
	}
	d.vec = vec;
	return ptxr_add(b->rp, &d);
}

/* One instruction statement [s, e) (guard and label already gone). */
static int parse_ins(struct body *b, const char *s, const char *e,
		     int guard, bool guard_neg)
{
	const char *ps[OPERANDS_MAX], *pe[OPERANDS_MAX];
	struct ins in = { .cls = INS_UNKNOWN };
	size_t oplen = 0, base;
	const char *op = s;
	uint64_t bits = 0;
	bool other = false;
	int nops, r;

	while (op + oplen < e && (is_ident(op[oplen]) || op[oplen] == ':'))
		oplen++;
	if (oplen == 0)
		return -EINVAL;
	for (base = 0; base < oplen && op[base] != '.'; base++)
		;
	nops = split_operands(op + oplen, e, ps, pe, OPERANDS_MAX);
	if (nops < 0)
		return nops;

	if (word_is(op, base, "ld") || word_is(op, base, "ldu")) {
		if (nops < 2)
			return -EINVAL;
		in.cls = ptx_op_has(op, oplen, ".param") ? INS_LDPARAM :
							     INS_LOAD;
	} else if (word_is(op, base, "st")) {
		if (nops < 2)
			return -EINVAL;
		if (ptx_op_has(op, oplen, ".param"))
			in.cls = INS_ESCAPE;
		else if (ptx_op_has(op, oplen, ".local") ||
			 (!ptx_op_has(op, oplen, ".global") &&
			  !ptx_op_has(op, oplen, ".shared") &&
			  !ptx_op_has(op, oplen, ".async") &&
			  addr_is_stack(ps[0], pe[0])))
			in.cls = INS_STLOCAL;
		else
			in.cls = INS_STORE;
	} else if (word_is(op, base, "atom") || word_is(op, base, "red") ||
		   word_is(op, base, "call")) {
		in.cls = INS_ESCAPE;
	} else if (word_is(op, base, "cp")) {
		in.cls = INS_COPY;
	} else if (is_pure(op, base)) {
		in.cls = INS_PURE;
	}

	switch (in.cls) {
	case INS_LDPARAM:
		/* dst(s) <- the parameter named in [name+off] */
		r = collect(b, ps, pe, 0, 1, &in.dst, &in.ndst, &bits, &other);
		if (r < 0)
			return r;
		if (bits)
			b->escaped |= bits;	/* a param as destination?! */
		bits = 0;
		other = false;
		r = collect(b, ps, pe, 1, nops, &in.src, &in.nsrc, &bits,
			    &other);
		if (r < 0)
			return r;
		/* Through a register, or a call's return value: anything. */
		in.src_bits = (in.nsrc || other || !bits) ? ALL_PARAMS : bits;
		in.nsrc = 0;
		break;
	case INS_STORE:
	case INS_STLOCAL:
	case INS_COPY:
		r = collect(b, ps, pe, 0, 1, &in.adr, &in.nadr, &in.adr_bits,
			    &other);
		if (r < 0)
			return r;
		r = collect(b, ps, pe, 1, nops, &in.src, &in.nsrc,
			    &in.src_bits, &other);
		if (r < 0)
			return r;
		/* A parameter's own address stored or copied to: escaped. */
		b->escaped |= in.adr_bits | in.src_bits;
		break;
	case INS_PURE:
	case INS_LOAD:
		r = collect(b, ps, pe, 0, nops ? 1 : 0, &in.dst, &in.ndst,
			    &bits, &other);
		if (r < 0)
			return r;
		b->escaped |= bits;
		r = collect(b, ps, pe, 1, nops, &in.src, &in.nsrc,
			    &in.src_bits, &other);
		if (r < 0)
			return r;
		/* A parameter's address taken (mov %rd, k_param_0): escaped. */
		b->escaped |= in.src_bits;
		break;
	case INS_ESCAPE:
	case INS_UNKNOWN:
		/*
		 * Operand 0 is a destination register, or memory written
		 * through (red, an unknown store): then an address.
		 */
		if (nops && memchr(ps[0], '[', (size_t)(pe[0] - ps[0])))
			r = collect(b, ps, pe, 0, 1, &in.adr, &in.nadr, &bits,
				    &other);
		else
			r = collect(b, ps, pe, 0, nops ? 1 : 0, &in.dst,
				    &in.ndst, &bits, &other);
		if (r < 0)
			return r;
		r = collect(b, ps, pe, 1, nops, &in.src, &in.nsrc, &bits,
			    &other);
		if (r < 0)
			return r;
		b->escaped |= bits;
		break;
	}
	r = x_classify(b, &in, op, oplen, base, ps, pe, nops);
	if (r < 0)
		return r;
	r = range_add(b, &in, op, oplen, ps, pe, nops, guard, guard_neg);
	if (r < 0)
		return r;
	if (ptx_grow((void **)&b->ins, &b->capins, b->nins + 1, sizeof(in)) < 0)
		return -ENOMEM;
	b->ins[b->nins++] = in;
	return 0;
}

/* A directive statement inside a body: declarations only. */
static bool body_directive_ok(const char *s, size_t n)
{
	return word_is(s, n, ".reg") || word_is(s, n, ".local") ||
	       word_is(s, n, ".shared") || word_is(s, n, ".param") ||
	       word_is(s, n, ".pragma") || word_is(s, n, ".loc");
}

/* Split the body [s, e) into statements and parse each. */
static int parse_body(struct body *b, const char *s, const char *e)
{
	while (s < e) {
		const char *t, *stmt;
		bool quoted, guard_neg;
		size_t n;
		int r, guard;

		s = skip_space(s);
		if (s >= e)
			break;
		if (*s == '{' || *s == '}') {	/* scope blocks */
			s++;
			continue;
		}
		n = ident_len(s);
		t = skip_space(s + n);
		if (n && *s != '%' && *s != '.' && *t == ':' &&
		    t[1] != ':') {	/* label */
			if (b->rp && ptxr_label(b->rp, s, n) < 0)
				return -ENOMEM;
			s = t + 1;
			continue;
		}
		quoted = false;
		for (t = s; t < e && *t != ';'; t++)
			if (*t == '"') {
				quoted = true;
				for (t++; t < e && *t != '"'; t++)
					;
				if (t >= e)
					return -EINVAL;
			}
		if (t >= e)
			return -EINVAL;
		stmt = s;
		s = t + 1;
		if (*stmt == '.') {
			if (!body_directive_ok(stmt, ident_len(stmt)))
				return -EINVAL;
			continue;
		}
		if (quoted)	/* strings belong to directives */
			return -EINVAL;
		guard = -1;
		guard_neg = false;
		if (*stmt == '@') {	/* guard predicate */
			stmt++;
			if (*stmt == '!') {
				guard_neg = true;
				stmt++;
			}
			if (*stmt != '%')
				return -EINVAL;
			guard = reg_index(b, stmt, ident_len(stmt));
			if (guard < 0)
				return guard;
			stmt = skip_space(stmt + ident_len(stmt));
		}
		r = parse_ins(b, stmt, t, guard, guard_neg);
		if (r < 0)
			return r;
	}
	return 0;
}

static uint64_t taint_of(const struct body *b, int first, int n)
{
	uint64_t t = 0;

	for (int i = 0; i < n; i++)
		t |= b->reg[b->pool[first + i]].taint;
	return t;
}

static bool taint_into(struct body *b, int first, int n, uint64_t t)
{
	bool changed = false;

	for (int i = 0; i < n; i++) {
		uint64_t *d = &b->reg[b->pool[first + i]].taint;

		if ((*d | t) != *d) {
			*d |= t;
			changed = true;
		}
	}
	return changed;
}

/* The fixpoint; returns the written set, ALL_PARAMS if it did not settle. */
static uint64_t body_written(struct body *b)
{
	uint64_t written = b->escaped, mem = 0;
	bool changed = true;
	int pass;

	for (pass = 0; changed && pass < FIXPOINT_PASSES_MAX; pass++) {
		uint64_t w0 = written, m0 = mem;

		changed = false;
		for (int i = 0; i < b->nins; i++) {
			const struct ins *in = &b->ins[i];
			uint64_t src = taint_of(b, in->src, in->nsrc) |
				       in->src_bits;
			uint64_t adr = taint_of(b, in->adr, in->nadr) |
				       in->adr_bits;

			switch (in->cls) {
			case INS_PURE:
				changed |= taint_into(b, in->dst, in->ndst, src);
				break;
			case INS_LOAD:
				changed |= taint_into(b, in->dst, in->ndst, mem);
				break;
			case INS_LDPARAM:
				changed |= taint_into(b, in->dst, in->ndst,
						      in->src_bits);
				break;
			case INS_STORE:
				written |= adr | src;
				mem |= src;
				break;
			case INS_STLOCAL:
				written |= adr;
				mem |= src;
				break;
			case INS_COPY:
				written |= adr;
				break;
			case INS_ESCAPE:
				written |= src | adr;
				mem |= src;
				changed |= taint_into(b, in->dst, in->ndst, mem);
				break;
			case INS_UNKNOWN:
				written |= src | adr;
				mem |= src;
				changed |= taint_into(b, in->dst, in->ndst,
						      ALL_PARAMS);
				break;
			}
		}
		changed |= written != w0 || mem != m0;
	}
	return changed ? ALL_PARAMS : written;
}

/* ---- extents: the verdict ---- */

#define X_EACH_BIT(j, mask) \
	for (uint64_t xb_ = (mask); \
	     xb_ && ((j) = __builtin_ctzll(xb_), 1); xb_ &= xb_ - 1)

/* One register's value, as an address: none yet, param + c, unknown. */
struct xval {
	uint8_t st;		/* XV_* */
	uint8_t global;		/* after cvta.to.global */
	int param;
	int64_t c;
};

enum { XV_BOT, XV_EXACT, XV_TOP };

static bool xval_join(struct xval *d, const struct xval *v)
{
	if (v->st == XV_BOT || d->st == XV_TOP)
		return false;
	if (d->st == XV_BOT) {
		*d = *v;
		return true;
	}
	if (v->st == XV_EXACT && d->param == v->param &&
	    d->global == v->global && d->c == v->c)
		return false;
	d->st = XV_TOP;
	return true;
}

/* What instruction in assigns to its X_* destination. */
static struct xval xval_of(const struct ins *in, const struct xval *xv)
{
	struct xval v = { .st = XV_TOP };
	const struct xval *s = in->xop == X_PARAM ? NULL : &xv[in->xreg];

	switch (in->xop) {
	case X_PARAM:
		v = (struct xval){ .st = XV_EXACT, .param = in->xparam };
		break;
	case X_MOV:
		v = *s;
		break;
	case X_ADD:
		v = *s;
		if (v.st == XV_EXACT) {
			v.c += in->ximm;
			if (v.c > X_IMM_MAX || v.c < -X_IMM_MAX)
				v.st = XV_TOP;
		}
		break;
	case X_CVTA:
		v = *s;
		if (v.st == XV_EXACT && v.global)
			v.st = XV_TOP;
		v.global = 1;
		break;
	}
	return v;
}

/*
 * Extents of the pointer parameters, after body_written() settled the
 * taints.  A parameter has one when every use of every register that may
 * hold a value derived from it is either the source of a mov, an add of a
 * constant or a cvta.to.global whose destination always holds exactly
 * "parameter + constant", or the address of a load, store, atomic or
 * reduction of known width whose register always holds exactly "parameter
 * + constant" in the access's state space.  Anything else (index
 * arithmetic, a comparison, a store of the pointer, a call, an unknown
 * instruction) leaves it without one.  Returns -ENOMEM or 0.
 */
static int body_extents(struct body *b, int np, struct ptxro_entry *e)
{
	struct xval *xv = calloc((size_t)b->nreg + 1, sizeof(*xv));
	int64_t lo[PTXRO_MAX_PARAMS], hi[PTXRO_MAX_PARAMS];
	uint64_t cand = 0, seen = 0;
	bool changed = true;
	int pass;

	if (!xv)
		return -ENOMEM;
	for (int i = 0; i < np && i < PTXRO_MAX_PARAMS; i++)
		if (b->psize[i] == 8)
			cand |= param_bit(i);
	cand &= ~b->escaped;
	/* Each register goes BOT -> EXACT -> TOP at most: it settles. */
	for (pass = 0; changed && pass <= 2 * b->nreg + 2; pass++) {
		changed = false;
		for (int k = 0; k < b->nins; k++) {
			const struct ins *in = &b->ins[k];
			struct xval top = { .st = XV_TOP };

			if (in->xop != X_NONE && in->xop != X_MEM) {
				struct xval v = xval_of(in, xv);

				changed |= xval_join(&xv[in->xdst], &v);
				continue;
			}
			for (int i = 0; i < in->ndst; i++)
				changed |= xval_join(&xv[b->pool[in->dst + i]],
						     &top);
		}
	}
	if (changed)
		cand = 0;
	for (int k = 0; k < b->nins && cand; k++) {
		const struct ins *in = &b->ins[k];
		bool adr_used = false;
		/* Destinations of these are written, not used. */
		bool dst_is_def = in->cls == INS_PURE || in->cls == INS_LOAD ||
				  in->cls == INS_LDPARAM ||
				  (in->cls == INS_ESCAPE && in->xop == X_MEM);
		int lists[3][2] = {
			{ in->src, in->nsrc },
			{ in->adr, in->nadr },
			{ in->dst, dst_is_def ? 0 : in->ndst },
		};

		if (in->cls == INS_LDPARAM) {
			/* A partial, or through a register: no extent. */
			if (in->xop != X_PARAM)
				cand &= ~in->src_bits;
			continue;
		}
		for (int l = 0; l < 3; l++)
			for (int i = 0; i < lists[l][1]; i++) {
				int r = b->pool[lists[l][0] + i];
				uint64_t t = b->reg[r].taint & cand;
				const struct xval *v = &xv[r];
				int j;

				if (!t)
					continue;
				if (in->xop == X_MEM && r == in->xreg &&
				    !adr_used && l < 2) {
					adr_used = true;
					X_EACH_BIT(j, t) {
						int64_t a = v->c + in->ximm;

						if (v->st != XV_EXACT ||
						    v->param != j ||
						    v->global != in->xglobal) {
							cand &= ~param_bit(j);
							continue;
						}
						if (!(seen & param_bit(j)) ||
						    a < lo[j])
							lo[j] = a;
						if (!(seen & param_bit(j)) ||
						    a + in->xwidth > hi[j])
							hi[j] = a + in->xwidth;
						seen |= param_bit(j);
					}
					continue;
				}
				if (in->xop != X_NONE && in->xop != X_MEM &&
				    in->xop != X_PARAM && r == in->xreg &&
				    l == 0) {
					const struct xval *dv = &xv[in->xdst];

					X_EACH_BIT(j, t)
						if (dv->st != XV_EXACT ||
						    dv->param != j)
							cand &= ~param_bit(j);
					continue;
				}
				cand &= ~t;
			}
	}
	free(xv);
	e->has_extent = cand & seen;
	if (!e->has_extent)
		return 0;
	e->ext = calloc((size_t)np, sizeof(*e->ext));
	if (!e->ext) {
		e->has_extent = 0;
		return -ENOMEM;
	}
	for (int i = 0; i < np && i < PTXRO_MAX_PARAMS; i++)
		if (e->has_extent & param_bit(i))
			e->ext[i] = (struct ptxro_extent){ lo[i], hi[i] };
	return 0;
}

/*
 * Keep the body for ptx-range.c when some pointer parameter that does not
 * escape lacks an exact extent: its range is solved per launch geometry.
 */
static int body_range(struct body *b, struct ptxro_entry *e)
{
	uint64_t cand = 0, *taint;
	int r;

	for (int i = 0; i < e->nparams && i < PTXRO_MAX_PARAMS; i++)
		if (e->size[i] == 8)
			cand |= param_bit(i);
	cand &= ~b->escaped & ~e->has_extent;
	if (!cand || !b->rp || b->nreg == 0 || b->rp_vec_full)
		return 0;
	taint = malloc((size_t)b->nreg * sizeof(*taint));
	if (!taint)
		return -ENOMEM;
	for (int i = 0; i < b->nreg; i++)
		taint[i] = b->reg[i].taint;
	r = ptxr_finish(b->rp, b->nreg, taint, e->size, e->nparams, cand);
	free(taint);
	if (r == -ENOMEM)
		return r;
	if (r == 0) {
		e->range = b->rp;
		b->rp = NULL;
	}
	return 0;
}

static void body_release(struct body *b)
{
	ptxr_unref(b->rp);
	for (int i = 0; i < b->np; i++)
		free(b->pname[i]);
	free(b->pname);
	free(b->plen);
	free(b->reg);
	free(b->hslot);
	free(b->pool);
	free(b->ins);
}

/* p just past ".entry": name, signature, body.  Returns the end or NULL. */
static const char *parse_entry(const char *p, struct ptxro_module *m,
			       const struct ptx_globals *g, int *err)
{
	struct ptxro_entry *e;
	struct body b = { 0 };
	const char *name, *body, *q;
	size_t nlen;
	int depth;

	*err = -EINVAL;
	p = skip_space(p);
	nlen = ident_len(p);
	if (nlen == 0 || *p == '%' || *p == '.')
		return NULL;
	name = p;
	p = skip_space(p + nlen);
	e = module_add(m, name, nlen);
	if (!e) {
		*err = -ENOMEM;
		return NULL;
	}
	e->nparams = 0;
	if (*p == '(') {
		p = skip_space(p + 1);
		while (*p != ')') {
			const char *pn;
			size_t pl;
			uint32_t sz;
			uint32_t *ns;
			char **nn;
			size_t *nl;

			if (e->nparams >= ENTRY_PARAMS_MAX)
				goto bad;
			p = parse_param(p, &pn, &pl, &sz);
			if (!p)
				goto bad;
			ns = realloc(e->size, (size_t)(e->nparams + 1) *
					      sizeof(*ns));
			if (!ns)
				goto nomem;
			e->size = ns;
			nn = realloc(b.pname, (size_t)(b.np + 1) * sizeof(*nn));
			if (!nn)
				goto nomem;
			b.pname = nn;
			nl = realloc(b.plen, (size_t)(b.np + 1) * sizeof(*nl));
			if (!nl)
				goto nomem;
			b.plen = nl;
			b.pname[b.np] = strndup(pn, pl);
			if (!b.pname[b.np])
				goto nomem;
			b.plen[b.np] = strlen(b.pname[b.np]);
			b.np++;
			e->size[e->nparams++] = sz;
			if (*p == ',')
				p = skip_space(p + 1);
		}
		p++;
	}
	/* Performance directives up to the body, or ';' for a prototype. */
	while (*p && *p != '{' && *p != ';' && *p != '"' && *p != '}')
		p++;
	if (*p == ';') {
		/* A declaration: it tells nothing about the code. */
		free(e->name);
		free(e->size);
		m->n--;
		body_release(&b);
		return p + 1;
	}
	if (*p != '{')
		goto bad;
	body = p + 1;
	for (q = body, depth = 1; *q && depth; q++) {
		if (*q == '{')
			depth++;
		else if (*q == '}')
			depth--;
		else if (*q == '"')
			for (q++; *q && *q != '"'; q++)
				;
		if (!*q)	/* a string left open: depth stays, bad */
			break;
	}
	if (depth)
		goto bad;
	/* q is past the closing brace. */
	entry_set_vars(e, g, body_vars(g, body, q - 1));
	b.psize = e->size;
	b.rp = ptxr_new();
	if (!b.rp)
		goto nomem;
	{
		int r = parse_body(&b, body, q - 1);

		if (r == -ENOMEM)
			goto nomem;
		if (r < 0)
			b.poisoned = true;
	}
	if (!b.poisoned) {
		uint64_t w = body_written(&b);
		uint64_t mask = e->nparams >= PTXRO_MAX_PARAMS ?
				ALL_PARAMS :
				(((uint64_t)1 << e->nparams) - 1);

		e->readonly = ~w & mask;
		/* An unsettled fixpoint (w all ones) proves nothing. */
		if (w != ALL_PARAMS && body_extents(&b, e->nparams, e) < 0)
			goto nomem;
		if (w != ALL_PARAMS && body_range(&b, e) < 0)
			goto nomem;
	}
	body_release(&b);
	*err = 0;
	return q;
nomem:
	*err = -ENOMEM;
bad:
	/* Keep the entry, proven nothing: its name must not look unknown. */
	e->readonly = 0;
	e->has_extent = 0;
	/* Where its body ends is unknown: it may name any variable. */
	entry_set_vars(e, g, (g->var.n > 0 || g->opaque ? VARS_GLOBAL : 0) |
			     (g->cvar.n > 0 || g->copaque ? VARS_CONST : 0));
	body_release(&b);
	return NULL;
}

int ptxro_parse(const char *text, size_t len, struct ptxro_module *m)
{
	char *t = strip_comments(text, len);
	struct ptx_globals g = { 0 };
	const char *p;
	int depth = 0, err = 0;
	size_t n;

	if (!t)
		return -ENOMEM;
	if (globals_collect(t, &g) < 0 || module_add_vars(m, &g.var, false) < 0 ||
	    module_add_vars(m, &g.cvar, true) < 0) {
		globals_release(&g);
		free(t);
		return -ENOMEM;
	}
	p = t;
	while (*(p = scan_word(p, &depth, &n)) && depth >= 0) {
		if (depth == 0 && word_is(p, n, ".entry")) {
			p = parse_entry(p + n, m, &g, &err);
			if (!p)
				break;
			continue;
		}
		p += n;
	}
	if (!err && depth)
		err = -EINVAL;
	globals_release(&g);
	free(t);
	return err;
}

/* ---- containers ---- */

static uint16_t rd16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t rd64(const unsigned char *p)
{
	return rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* Whether b[0, n) reads as PTX text (printable, no NUL inside). */
static bool looks_like_text(const unsigned char *b, size_t n)
{
	if (n == 0)
		return false;
	/* Control bytes but white space, and DEL. */
	for (size_t i = 0; i < n; i++)
		if (ptx_cc[b[i]] & CC_BINARY)
			return false;
	return true;
}

/*
 * Call instructions in PTX text b (n bytes): a statement whose opcode,
 * after an optional guard predicate, is call or call.*.  Counted over the
 * whole text, functions included: a kernel that calls anything may need
 * more stack than the compiler can bound (ctx-stack.c).
 */
static unsigned text_calls(const unsigned char *b, size_t n)
{
	unsigned calls = 0;
	size_t i = 0;

	while (i < n) {
		size_t j = i;

		while (j < n && (b[j] == ' ' || b[j] == '\t' || b[j] == '\n' ||
				 b[j] == '{' || b[j] == '}'))
			j++;
		if (j < n && b[j] == '@') {	/* @%p1 or @!%p1 */
			while (j < n && b[j] != ' ' && b[j] != '\t' &&
			       b[j] != '\n')
				j++;
			while (j < n && (b[j] == ' ' || b[j] == '\t'))
				j++;
		}
		if (j + 4 <= n && memcmp(b + j, "call", 4) == 0 &&
		    (j + 4 == n || b[j + 4] == '.' || b[j + 4] == ' ' ||
		     b[j + 4] == '\t'))
			calls++;
		i = j;
		while (i < n && b[i] != '\n' && b[i] != ';')
			i++;
		i++;
	}
	return calls;
}

static int scan_text(const unsigned char *b, size_t n, struct ptxro_module *m,
		     struct ptxro_image_stats *st)
{
	int r;

	if (!looks_like_text(b, n)) {
		st->bad++;
		return 0;
	}
	st->calls += text_calls(b, n);
	st->ptx++;
	if (!m)
		return 0;	/* found and counted, not parsed */
	r = ptxro_parse((const char *)b, n, m);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		st->bad++;
	return 0;
}

/*
 * A compressed PTX entry (header h of ehs bytes, payload psz bytes):
 * compressed size (32 bits) at +16, text size at +56 (CUDA 13.0's
 * fatbinary; the word at +20 is not part of the size).
 * Returns 1 when the text was analysed, 0 when skipped (counted), or
 * -ENOMEM.
 */
static int scan_compressed(const unsigned char *h, uint64_t ehs, uint64_t psz,
			   uint32_t flags, struct ptxro_module *m,
			   struct ptxro_image_stats *st)
{
	uint64_t csz = rd32(h + 16), usz;
	unsigned char *text;
	long n;
	int r;

	usz = ehs >= 64 ? rd64(h + 56) : 0;
	if (csz == 0 || csz > psz || usz == 0 || usz > FATBIN_PTX_MAX) {
		st->bad++;
		return 0;
	}
	text = malloc(usz);
	if (!text)
		return -ENOMEM;
	if (flags & FATBIN_FLAG_ZSTD)
		n = codec_zstd_decompress(text, usz, h + ehs, csz);
	else
		n = codec_lz4_decompress(text, usz, h + ehs, csz);
	if (n < 0) {
		if (n == -ENOSYS)
			st->compressed++;	/* no decoder here */
		else
			st->bad++;
		free(text);
		return 0;
	}
	st->decompressed++;
	r = scan_text(text, strnlen((const char *)text, (size_t)n), m, st);
	free(text);
	return r < 0 ? r : 1;
}

/*
 * A fatbin: 16-byte header (magic, version, header size, payload size),
 * then entries (kind, version, header size, payload size, flags ...).
 * Offsets observed with CUDA 13.0's fatbinary, docs/design-streams.md.
 */
static int scan_fatbin(const unsigned char *b, size_t avail,
		       struct ptxro_module *m, struct ptxro_image_stats *st)
{
	uint64_t hs, fs, off, end;
	unsigned found = 0;
	int r;

	if (avail < 16 || rd32(b) != FATBIN_MAGIC) {
		st->bad++;
		return 0;
	}
	hs = rd16(b + 6);
	fs = rd64(b + 8);
	if (hs < 16 || fs > FATBIN_SIZE_MAX || hs + fs > avail) {
		st->bad++;
		return 0;
	}
	end = hs + fs;
	for (off = hs; off + 16 <= end;) {
		const unsigned char *h = b + off;
		uint32_t ehs = rd32(h + 4), flags;
		uint64_t psz = rd64(h + 8), n;

		if (ehs < 64 || ehs > end - off || psz > end - off - ehs) {
			st->bad++;
			break;
		}
		if (rd16(h) == FATBIN_KIND_PTX) {
			flags = rd32(h + 40);
			if (flags & (FATBIN_FLAG_LZ4 | FATBIN_FLAG_ZSTD)) {
				r = scan_compressed(h, ehs, psz, flags, m, st);
				if (r < 0)
					return r;
				found += r;
			} else {
				/* NUL-padded text */
				n = strnlen((const char *)h + ehs, psz);
				r = scan_text(h + ehs, n, m, st);
				if (r < 0)
					return r;
				found++;
			}
		}
		off += ehs + psz;
	}
	if (!found)
		st->no_ptx++;
	return 0;
}

size_t ptxro_image_size(const void *image, size_t cap)
{
	const unsigned char *b = image;

	if (!b || cap < 4)
		return 0;
	if (rd32(b) == FATBIN_MAGIC) {
		uint64_t n;

		if (cap < 16)
			return 0;
		n = (uint64_t)rd16(b + 6) + rd64(b + 8);
		return n <= cap ? (size_t)n : 0;
	}
	if (rd32(b) == FATBIN_WRAPPER_MAGIC)
		return cap < 24 ? 0 : 24;
	if (b[0] == 0x7f)
		return 0;	/* ELF: no PTX */
	return strnlen(image, cap);
}

int ptxro_scan_image(const void *image, size_t avail, int follow_wrapper,
		     struct ptxro_module *m, struct ptxro_image_stats *st)
{
	const unsigned char *b = image;

	if (!b || avail < 4) {
		st->no_ptx++;
		return 0;
	}
	if (rd32(b) == FATBIN_MAGIC)
		return scan_fatbin(b, avail, m, st);
	if (rd32(b) == FATBIN_WRAPPER_MAGIC) {
		/* magic, version, then a pointer to the fatbin */
		const unsigned char *fb;
		size_t n;

		if (!follow_wrapper || avail < 16) {
			st->no_ptx++;
			return 0;
		}
		memcpy(&fb, b + 8, sizeof(fb));
		n = ptxro_image_size(fb, FATBIN_SIZE_MAX);
		if (!fb || n == 0 || rd32(fb) != FATBIN_MAGIC) {
			st->no_ptx++;
			return 0;
		}
		return scan_fatbin(fb, n, m, st);
	}
	if (b[0] == 0x7f) {		/* an ELF cubin */
		st->no_ptx++;
		return 0;
	}
	return scan_text(b, strnlen(image, avail), m, st);
}
