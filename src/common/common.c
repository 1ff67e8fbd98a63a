/*-------------------------------------------------------------------------
 * common.c
 *		The common family: pg_coord's infrastructure, which every concern
 *		may call and which calls no concern.  This file is its init.
 *
 *	common_args.c	checks of what callers pass in: required and named
 *					arguments, sizes, durations, lock paths and the name
 *					keys they hash to, time arithmetic, parallel workers
 *	common_lock.c	lock-manager helpers: tags, taking locks with a
 *					timeout, the per-session cap, holds, who holds what
 *	common_tz.c		time zones: tz names resolved against PostgreSQL's
 *					database, where a zone's UTC offset changes (for
 *					cron schedules and app periods)
 *	common_spi.c	running SQL as the extension owner: the catalog
 *					version check, the owner switch, CoordSpiBegin/End,
 *					saved plans, the SPI error style, subtransactions,
 *					the backend-local caches' memory contexts
 *
 * common.h declares all of it, grouped by file.  CoordCommonInit runs first
 * in _PG_init, before any concern's init.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/common.h"

void
CoordCommonInit(void)
{
	CoordCommonLockInit();
	CoordCommonSpiInit();
}
