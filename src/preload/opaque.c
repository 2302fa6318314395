/*
 * opaque.c - stream operations kmux does not model (wrap-opaque.c's
 * generated wrappers): ordered like a barrier, with all memory backed.
 *
 * kmux cannot say what an array copy, a batched copy, a prefetch, a stream
 * memory operation or a semaphore signal touches, so it assumes everything:
 * on a default stream the call runs on that stream itself, bridged to the
 * pool (every earlier pool operation before it, every later one after it),
 * and every object of the memory manager is made resident for it.  These
 * calls are rare; being slow for them is fine, being unordered is not.
 */
#include "mm.h"
#include "opaque.h"

CUresult opaque_run(CUstream s, int per_thread, streams_issue_fn issue,
		    void *arg)
{
	struct streams_req rq = {
		.flags = STREAMS_BRIDGE,
		.orig = streams_default_handle(s, per_thread),
		.issue = issue,
		.arg = arg,
	};
	struct mm_op mo = { 0 };
	CUresult r;

	if (unlikely(mm_on) &&
	    (r = mm_op_begin(&mo, NULL, 0, 1, 0, s, per_thread)) !=
	    CUDA_SUCCESS)
		goto out;
	if (!(kmux_streams && streams_is_default(s) && streams_run(&rq, &r)))
		r = streams_pass(s, issue, arg);
out:
	mm_op_end(&mo);
	return r;
}
