/*-------------------------------------------------------------------------
 * common.c
 *		Helpers shared by every pg_coord concern.
 *
 * Argument checks raise the contract's SQLSTATEs (22004 for a NULL where a
 * value is required, 22023 for a malformed value).  SPI work runs as the
 * owner of schema coord with SECURITY_RESTRICTED_OPERATION, so the tables
 * behind the functions need no grants to callers, and every statement names
 * its objects and operators with a schema, so the caller's search_path can
 * never substitute objects of its own.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <netdb.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_namespace.h"
#include "commands/extension.h"
#include "common/hashfn.h"
#include "common/int.h"
#include "common/ip.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inet.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/resowner.h"
#include "utils/syscache.h"

#include "common.h"
#include "compat.h"

void
CoordCommonInit(void)
{
	CoordCommonLockInit();
	CoordCommonSpiInit();
}
