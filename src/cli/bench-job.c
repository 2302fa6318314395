/*
 * bench-job.c - owns what a job of `kmux bench` is (see bench-job.h): the
 * command line splitter that tells a Python job from a shell command, the
 * client request decoder (untrusted bytes: total, bounded) and the record.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

#include "bench-job.h"

void bjob_free(struct bjob *j)
{
	if (j->argv)
		for (int i = 0; i < j->argc; i++)
			free(j->argv[i]);
	free(j->argv);
	free(j->cwd);
	free(j->out_dir);
	if (j->env)
		for (int i = 0; i < j->nenv; i++)
			free(j->env[i]);
	free(j->env);
	memset(j, 0, sizeof(*j));
}

static int push(struct bjob *j, const char *s, size_t n)
{
	char **v;

	if (j->argc >= BJOB_MAX_ARGS)
		return -E2BIG;
	v = realloc(j->argv, (size_t)(j->argc + 2) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	j->argv = v;
	v[j->argc] = strndup(s, n);
	if (!v[j->argc])
		return -ENOMEM;
	v[++j->argc] = NULL;
	return 0;
}

bool bjob_env_kept(const char *kv)
{
	static const char *const names[] = {
		"LD_PRELOAD", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES",
	};
	size_t n = strcspn(kv, "=");

	if (n >= 5 && strncmp(kv, "KMUX_", 5) == 0)
		return true;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i]) == n && strncmp(kv, names[i], n) == 0)
			return true;
	return false;
}

char **bjob_env_merge(char *const *job, char *const *own)
{
	size_t n = 0, k = 0;
	char **env;

	for (size_t i = 0; own[i]; i++)
		n++;
	for (size_t i = 0; job[i]; i++)
		n++;
	env = calloc(n + 1, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; own[i]; i++)
		if (bjob_env_kept(own[i]))
			env[k++] = own[i];
	for (size_t i = 0; job[i]; i++)
		if (!bjob_env_kept(job[i]))
			env[k++] = job[i];
	return env;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a > b && strcmp(s + a - b, suffix) == 0;
}

/* python, python3, python3.11, /usr/bin/python3 */
static bool is_python(const char *w)
{
	const char *b = strrchr(w, '/');

	b = b ? b + 1 : w;
	if (strncmp(b, "python", 6) != 0)
		return false;
	for (b += 6; *b; b++)
		if (!((*b >= '0' && *b <= '9') || *b == '.'))
			return false;
	return true;
}

/*
 * Split line into words into j, the way sh would when the line has only
 * words, quotes and backslashes: 1; 0 when sh would do more with it.
 */
static int split(const char *line, struct bjob *j)
{
	/* Unquoted, these make the line more than words. */
	static const char special[] = "|&;<>()$`*?[]{}~!\n";
	size_t cap = strlen(line) + 1, n;
	char *w = malloc(cap);
	const char *p = line;
	int r = 1;

	if (!w)
		return -ENOMEM;
	for (;;) {
		bool word = false, quoted = false, assign = false;

		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		if (*p == '#') {
			r = 0;
			goto out;
		}
		n = 0;
		while (*p && *p != ' ' && *p != '\t') {
			word = true;
			if (*p == '\'') {
				const char *e = strchr(p + 1, '\'');

				if (!e) {
					r = 0;
					goto out;
				}
				memcpy(w + n, p + 1, (size_t)(e - p - 1));
				n += (size_t)(e - p - 1);
				p = e + 1;
				quoted = true;
			} else if (*p == '"') {
				for (p++; *p && *p != '"'; p++) {
					if (*p == '$' || *p == '`') {
						r = 0;
						goto out;
					}
					if (*p == '\\' && p[1] &&
					    strchr("\"\\$`", p[1]))
						p++;
					w[n++] = *p;
				}
				if (!*p) {
					r = 0;
					goto out;
				}
				p++;
				quoted = true;
			} else if (*p == '\\') {
				if (!p[1] || p[1] == '\n') {
					r = 0;
					goto out;
				}
				w[n++] = p[1];
				p += 2;
				quoted = true;
			} else if (strchr(special, *p)) {
				r = 0;
				goto out;
			} else {
				if (*p == '=' && !quoted && j->argc == 0)
					assign = true;
				w[n++] = *p++;
			}
		}
		if (assign) {	/* NAME=VALUE CMD: an environment */
			r = 0;
			goto out;
		}
		if (word && (r = push(j, w, n)) < 0)
			goto out;
		r = 1;
	}
out:
	free(w);
	return r;
}

int bjob_from_line(const char *line, struct bjob *j)
{
	struct bjob words = { 0 };
	int r;

	memset(j, 0, sizeof(*j));
	r = split(line, &words);
	if (r == -ENOMEM)
		goto out;
	if (r == 1 && words.argc > 0 && is_python(words.argv[0])) {
		/* python SCRIPT.py: the worker is the interpreter. */
		if (words.argc < 2 || words.argv[1][0] == '-') {
			r = 0;
		} else {
			free(words.argv[0]);
			memmove(words.argv, words.argv + 1,
				(size_t)words.argc * sizeof(*words.argv));
			words.argc--;
		}
	}
	if (r == 1 && words.argc > 0 && ends_with(words.argv[0], ".py")) {
		*j = words;
		j->python = true;
		return 1;
	}
	bjob_free(&words);
	if (push(j, "/bin/sh", 7) || push(j, "-c", 2) ||
	    push(j, line, strlen(line)))
		goto out;
	return 0;
out:
	bjob_free(&words);
	bjob_free(j);
	return -ENOMEM;
}

static int fail(char *err, size_t errlen, const char *msg)
{
	snprintf(err, errlen, "%s", msg);
	return -EINVAL;
}

static int abs_path(const cJSON *v, char **out, const char *what, char *err,
		    size_t errlen)
{
	if (!cJSON_IsString(v) || v->valuestring[0] != '/') {
		snprintf(err, errlen, "\"%s\" must be an absolute path", what);
		return -EINVAL;
	}
	*out = strdup(v->valuestring);
	return *out ? 0 : -ENOMEM;
}

/* "env": an array of "K=V", K not empty and without '='. */
static int env_from(const cJSON *env, struct bjob *j, char *err,
		    size_t errlen)
{
	const cJSON *it;
	int n;

	if (!cJSON_IsArray(env) || (n = cJSON_GetArraySize(env)) >
	    BJOB_MAX_ENV) {
		snprintf(err, errlen, "\"env\" must be an array of at most %d "
			 "\"NAME=VALUE\" strings", BJOB_MAX_ENV);
		return -EINVAL;
	}
	j->env = calloc((size_t)n + 1, sizeof(*j->env));
	if (!j->env)
		return -ENOMEM;
	cJSON_ArrayForEach(it, env) {
		const char *eq;

		if (!cJSON_IsString(it) ||
		    !(eq = strchr(it->valuestring, '=')) ||
		    eq == it->valuestring) {
			snprintf(err, errlen, "\"env\" entry %d is not a "
				 "\"NAME=VALUE\" string", j->nenv);
			return -EINVAL;
		}
		if (!(j->env[j->nenv] = strdup(it->valuestring)))
			return -ENOMEM;
		j->nenv++;
	}
	return 0;
}

int bjob_from_request(const char *buf, size_t len, struct bjob *j,
		      char *err, size_t errlen)
{
	cJSON *root = NULL, *it, *argv = NULL, *cwd = NULL, *out_dir = NULL;
	cJSON *env = NULL;
	int r;

	memset(j, 0, sizeof(*j));
	if (len > BJOB_MAX_LINE)
		return fail(err, errlen, "request too long");
	/* cJSON would cut a string at an escaped NUL: refuse both (and, in
	 * passing, an escaped backslash followed by "u0000"). */
	if (memchr(buf, '\0', len) || memmem(buf, len, "\\u0000", 6))
		return fail(err, errlen, "NUL byte in request");
	root = cJSON_ParseWithLength(buf, len);
	if (!cJSON_IsObject(root)) {
		r = fail(err, errlen, "request is not a JSON object");
		goto out;
	}
	cJSON_ArrayForEach(it, root) {
		cJSON **slot = !it->string ? NULL :
			strcmp(it->string, "argv") == 0 ? &argv :
			strcmp(it->string, "cwd") == 0 ? &cwd :
			strcmp(it->string, "out_dir") == 0 ? &out_dir :
			strcmp(it->string, "env") == 0 ? &env : NULL;

		if (!slot) {
			snprintf(err, errlen, "unknown key \"%.64s\" in request",
				 it->string ? it->string : "");
			r = -EINVAL;
			goto out;
		}
		if (*slot) {
			r = fail(err, errlen, "a key twice in request");
			goto out;
		}
		*slot = it;
	}
	if (!cJSON_IsArray(argv) || cJSON_GetArraySize(argv) < 1 ||
	    cJSON_GetArraySize(argv) > BJOB_MAX_ARGS) {
		snprintf(err, errlen, "\"argv\" must be an array of 1..%d "
			 "strings", BJOB_MAX_ARGS);
		r = -EINVAL;
		goto out;
	}
	cJSON_ArrayForEach(it, argv) {
		if (!cJSON_IsString(it)) {
			r = fail(err, errlen, "\"argv\" must hold strings");
			goto out;
		}
		if ((r = push(j, it->valuestring, strlen(it->valuestring))))
			goto out;
	}
	if (!j->argv[0][0]) {
		r = fail(err, errlen, "empty command");
		goto out;
	}
	if ((r = abs_path(cwd, &j->cwd, "cwd", err, errlen)))
		goto out;
	if (out_dir && !cJSON_IsNull(out_dir) &&
	    (r = abs_path(out_dir, &j->out_dir, "out_dir", err, errlen)))
		goto out;
	if (env && (r = env_from(env, j, err, errlen)))
		goto out;
	j->python = ends_with(j->argv[0], ".py");
	r = 0;
out:
	if (r == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	if (r)
		bjob_free(j);
	cJSON_Delete(root);
	return r;
}

static char *print_line(cJSON *o)
{
	char *s = o ? cJSON_PrintUnformatted(o) : NULL, *line = NULL;

	if (s && asprintf(&line, "%s\n", s) < 0)
		line = NULL;
	free(s);
	cJSON_Delete(o);
	return line;
}

/* A JSON array of the strings of NULL-terminated v; NULL on ENOMEM. */
static cJSON *env_array(char *const *v)
{
	int n = 0;

	while (v[n])
		n++;
	return cJSON_CreateStringArray((const char *const *)v, n);
}

char *bjob_request(const struct bjob *j)
{
	cJSON *o = cJSON_CreateObject(), *a = cJSON_CreateStringArray(
		(const char *const *)j->argv, j->argc);

	if (!o || !a || !cJSON_AddItemToObject(o, "argv", a)) {
		cJSON_Delete(a);
		cJSON_Delete(o);
		return NULL;
	}
	if ((j->cwd && !cJSON_AddStringToObject(o, "cwd", j->cwd)) ||
	    (j->out_dir && !cJSON_AddStringToObject(o, "out_dir", j->out_dir)) ||
	    (j->env && !cJSON_AddItemToObject(o, "env", env_array(j->env)))) {
		cJSON_Delete(o);
		return NULL;
	}
	return print_line(o);
}

/* Microseconds are enough, and keep the records short (no libm). */
static double us(double s)
{
	return (double)(long long)(s * 1e6 + (s >= 0 ? 0.5 : -0.5)) / 1e6;
}

char *bjob_record(const struct bjob_result *r)
{
	cJSON *o = cJSON_CreateObject();
	bool ok = o != NULL;
	int st = r->status;

	ok = ok && cJSON_AddNumberToObject(o, "i", (double)r->i);
	ok = ok && cJSON_AddStringToObject(o, "cmd", r->cmd ? r->cmd : "");
	ok = ok && cJSON_AddNumberToObject(o, "exit",
					   WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	ok = ok && cJSON_AddNumberToObject(o, "signal",
					   WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	ok = ok && cJSON_AddNumberToObject(o, "start_s", us(r->start_s));
	ok = ok && cJSON_AddNumberToObject(o, "wall_s", us(r->wall_s));
	ok = ok && cJSON_AddNumberToObject(o, "queue_s", us(r->queue_s));
	ok = ok && cJSON_AddNumberToObject(o, "worker", r->worker);
	ok = ok && cJSON_AddNumberToObject(o, "worker_pid", r->worker_pid);
	if (ok && r->out)
		ok = cJSON_AddStringToObject(o, "out", r->out) != NULL;
	if (ok && r->err)
		ok = cJSON_AddStringToObject(o, "err", r->err) != NULL;
	if (ok && r->error)
		ok = cJSON_AddStringToObject(o, "error", r->error) != NULL;
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return print_line(o);
}

char *bjob_error_reply(const char *msg)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || !cJSON_AddStringToObject(o, "error", msg)) {
		cJSON_Delete(o);
		return NULL;
	}
	return print_line(o);
}
