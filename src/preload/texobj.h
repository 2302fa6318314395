/*
 * texobj.h - the texture and surface objects a program holds.  A kernel
 * given one (a CUtexObject or CUsurfObject parameter, or one inside a
 * structure passed by value) reaches memory through the handle, not
 * through a pointer: an array, or linear memory kmux tracks, that its
 * parameters do not show.  kparams.c flags such a launch
 * (KPARAMS_OPAQUE_HANDLE), and the scheduler and the memory manager then
 * treat it as a launch whose accesses they cannot see: a barrier, and all
 * memory backed (docs/design-streams.md, "The one assumption").
 *
 * This file owns the set of live handles only; wrap-texobj.c adds and
 * removes them around the driver's calls.  Handles a kernel writes into
 * device memory, or a device-to-device copy moves, stay unseen.  One mutex; while the program
 * holds none a launch pays one relaxed load (texobj_any()).
 */
#ifndef KMUX_TEXOBJ_H
#define KMUX_TEXOBJ_H

#include <stdbool.h>
#include <stdint.h>

/* Any live texture or surface object, or one the set failed to keep. */
bool texobj_any(void);

/*
 * Whether w is a live handle, or might be: once the set failed to keep
 * one (out of memory), every nonzero word might, so that a launch given
 * the lost handle is never scheduled as if it reached nothing.
 */
bool texobj_is_live(uint64_t w);

/*
 * A live handle was uploaded into device memory (copy.c): a kernel may read
 * it from there, and kmux cannot tell which does, so until no object lives
 * every launch is one whose accesses kmux cannot see (kparams.c).
 */
void texobj_escape(void);
bool texobj_escaped(void);

/* Handle h was created (0; -ENOMEM: lost, see texobj_is_live()). */
int texobj_add(uint64_t h);

/* Handle h was destroyed (or its creation failed): no longer live. */
void texobj_remove(uint64_t h);

/* How many are live (for tests and the log). */
unsigned texobj_count(void);

/* fork(2): the set's lock is held across fork. */
void texobj_atfork_prepare(void);
void texobj_atfork_parent(void);
void texobj_atfork_child(void);

#endif
