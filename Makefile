# pg_coord: PGXS build.  `make demo`, `make test` and `make bench` set up
# everything they need (packages, a private cluster); see README.md.

EXTENSION  = pg_coord
EXTVERSION = $(shell sed -n "s/^default_version *= *'\(.*\)'/\1/p" $(EXTENSION).control)

MODULE_big = pg_coord
OBJS = \
	src/pg_coord.o \
	src/common/common.o \
	src/common/common_args.o \
	src/common/common_lock.o \
	src/common/common_spi.o \
	src/common/common_tz.o \
	src/locks.o \
	src/requests.o \
	src/jobs/jobs.o \
	src/jobs/jobs_claim.o \
	src/jobs/jobs_next.o \
	src/jobs/jobs_claim_row.o \
	src/jobs/jobs_finish.o \
	src/jobs/jobs_enqueue.o \
	src/jobs/jobs_control.o \
	src/jobs/jobs_common.o \
	src/jobs/jobs_limits.o \
	src/jobs/jobs_limits_sql.o \
	src/workflows/workflows.o \
	src/schedules/cron.o \
	src/schedules/schedules.o \
	src/tick.o \
	src/apps/apps.o \
	src/apps/apps_grid.o \
	src/apps/apps_periods.o \
	src/apps/apps_rerun.o \
	src/apps/apps_alerts.o \
	src/apps/apps_tick.o \
	src/apps/apps_graph.o \
	src/apps/apps_define.o \
	src/election.o \
	src/leases.o \
	src/partitions/partitions_assign.o \
	src/partitions/partitions_sync.o \
	src/partitions/partitions.o \
	src/semaphores.o \
	src/metrics.o \
	src/workflows/workflows_steps.o \
	src/workflows/workflows_batch.o

# The install script of the version in development (the control file's
# default_version) is built from one fragment per concern, in this order.
SQL_FRAGMENTS = \
	sql/parts/head.sql \
	sql/parts/locks.sql \
	sql/parts/requests.sql \
	sql/parts/jobs.sql \
	sql/parts/jobs_limits.sql \
	sql/parts/jobs_views.sql \
	sql/parts/workflows.sql \
	sql/parts/schedules.sql \
	sql/parts/apps.sql \
	sql/parts/apps_rerun.sql \
	sql/parts/election.sql \
	sql/parts/leases.sql \
	sql/parts/partitions.sql \
	sql/parts/semaphores.sql \
	sql/parts/signals.sql \
	sql/parts/workflows_steps.sql \
	sql/parts/batches.sql \
	sql/parts/metrics.sql \
	sql/parts/grants.sql \
	sql/parts/dump.sql

# Released scripts are frozen files, listed in sql/released.sha256 (make test
# checks them; tools/release.sh adds a release's): DATA is those, and the
# hand-written update scripts to the control file's version.  The install script
# of a version in development is built from the fragments; once the control
# file's version is released (tools/release.sh freeze), its script is a
# committed file too, and a change to the fragments fails make test
# (test/static/released.py: later SQL changes open the next version,
# tools/release.sh open).  0.1.0's install script is not shipped (it granted
# PUBLIC every function): only the update from it is; test/upgrade/ keeps a
# copy for the upgrade tests.
EXT_RELEASED := $(shell grep -qs ' sql/$(EXTENSION)--$(EXTVERSION)\.sql$$' sql/released.sha256 && echo yes)
ifneq ($(EXT_RELEASED),yes)
DATA_built = sql/$(EXTENSION)--$(EXTVERSION).sql
endif
DATA = $(filter-out $(DATA_built),$(sort \
	$(filter sql/%,$(shell sed -n 's/^[0-9a-f]\{64\}  //p' sql/released.sha256)) \
	$(wildcard sql/$(EXTENSION)--*--$(EXTVERSION).sql)))

PG_CPPFLAGS = -Isrc -DCOORD_VERSION='"$(EXTVERSION)"' -Wall -Wextra -Wno-unused-parameter \
	-Wno-sign-compare -Wno-missing-field-initializers
# Warnings stop the build only in development and CI: `make WERROR=1`
# (make test, make test-matrix and .ci/run set it).  A user's newer compiler
# may warn where ours does not, and that must not break `pgxn install`.
WERROR ?= 0
ifeq ($(WERROR),1)
PG_CPPFLAGS += -Werror
endif

# pg_regress inputs live in test/sql, isolation specs in test/specs, and the
# expected outputs of both in the top-level expected/ (names must not clash).
REGRESS = $(sort $(notdir $(basename $(wildcard test/sql/*.sql))))
REGRESS_OPTS = --inputdir=test --outputdir=. --load-extension=$(EXTENSION)
ISOLATION = $(sort $(notdir $(basename $(wildcard test/specs/*.spec))))
ISOLATION_OPTS = --inputdir=test --outputdir=. --load-extension=$(EXTENSION)

EXTRA_CLEAN = results/ regression.diffs regression.out test/results/ bench/out/ $(EXTENSION)-*.zip .build-flags

# The documentation: PGXS installs DOCS into $(docdir)/extension/pg_coord/
# (a folder of its own: other extensions have a README.md too), and the
# manual's pages keep their tree below it, so the README's links and the
# pages' links to each other still work there.
DOCS = README.md SECURITY.md CHANGELOG.md
DOC_PAGES = $(sort $(wildcard docs/*.md docs/*/*.md))

PG_CONFIG ?= pg_config
# No JIT bitcode: it needs clang, which a fresh machine may not have.
override with_llvm = no
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

docmoduledir := extension/$(EXTENSION)
.PHONY: install-doc-pages uninstall-doc-pages
install: install-doc-pages
uninstall: uninstall-doc-pages
install-doc-pages: installdirs
	@set -e; for f in $(DOC_PAGES); do \
		$(MKDIR_P) '$(DESTDIR)$(docdir)/$(docmoduledir)/'"$$(dirname $$f)"; \
		$(INSTALL_DATA) $(srcdir)/$$f '$(DESTDIR)$(docdir)/$(docmoduledir)/'"$$f"; \
	done
uninstall-doc-pages:
	rm -rf '$(DESTDIR)$(docdir)/$(docmoduledir)'

# PGXS tracks no header dependencies: every object depends on every header
# (src/ and its family folders).
$(OBJS): $(wildcard src/*.h src/*/*.h)
# the library's version (COORD_VERSION) comes from the control file
src/common/common_spi.o: $(EXTENSION).control

# Nor flags: objects are rebuilt when WERROR changes.
.PHONY: FORCE
.build-flags: FORCE
	@echo 'WERROR=$(WERROR)' | cmp -s - $@ || echo 'WERROR=$(WERROR)' > $@
$(OBJS): .build-flags

# coord-agent, the per-host job manager: agent/ has its own PGXS Makefile
# (a program linking libpq only); built, installed and cleaned with the rest
# unless COORD_AGENT=0 (the Debian build: the extension once per major, the
# agent once, in a package of its own).
COORD_AGENT ?= 1
.PHONY: agent install-agent clean-agent
ifneq ($(COORD_AGENT),0)
all: agent
install: install-agent
clean: clean-agent
endif
agent:
	$(MAKE) -C agent
install-agent: agent
	$(MAKE) -C agent install
clean-agent:
	$(MAKE) -C agent clean

ifneq ($(EXT_RELEASED),yes)
sql/$(EXTENSION)--$(EXTVERSION).sql: $(SQL_FRAGMENTS) $(EXTENSION).control
	cat $(SQL_FRAGMENTS) > $@
endif

# The version lives in the control file only; META.json is made from it
# (and committed: PGXN reads it from the archive).
all: META.json
META.json: META.json.in $(EXTENSION).control
	sed 's/@EXTVERSION@/$(EXTVERSION)/g' $< > $@

# make dist: the PGXN archive $(EXTENSION)-$(EXTVERSION).zip, every file
# under $(EXTENSION)-$(EXTVERSION)/, from git: the tag v$(EXTVERSION) if it
# exists, else HEAD (DIST_REF=... for another commit); uncommitted changes
# are not in it.  The archive's META.json is then checked against the PGXN
# Meta Spec 1.0.0 and the archive's own control file
# (test/static/pgxn_meta.py, which make test runs on the tree too).
DIST_REF ?= $(shell git rev-parse -q --verify 'refs/tags/v$(EXTVERSION)^{commit}' >/dev/null 2>&1 && echo v$(EXTVERSION) || echo HEAD)
DIST = $(EXTENSION)-$(EXTVERSION).zip
.PHONY: dist
dist: META.json
	@[ '$(DIST_REF)' != HEAD ] || git diff --quiet HEAD -- META.json || \
		{ echo "make dist: META.json differs from HEAD's (META.json.in or the version changed): commit it first" >&2; exit 1; }
	@[ '$(DIST_REF)' != HEAD ] || git diff --quiet HEAD || \
		echo "make dist: uncommitted changes are not in $(DIST) (it is made from HEAD)" >&2
	git archive --format=zip --prefix=$(EXTENSION)-$(EXTVERSION)/ -o $(DIST) $(DIST_REF)
	python3 test/static/pgxn_meta.py --zip $(DIST)

# One suite at a time, so that the runner can count and report each.
.PHONY: installcheck-regress installcheck-isolation test test-matrix demo bench callgrind
installcheck-regress:
	$(pg_regress_installcheck) $(REGRESS_OPTS) --dbname=contrib_regression $(REGRESS)
installcheck-isolation:
	$(pg_isolation_regress_installcheck) $(ISOLATION_OPTS) --dbname=isolation_regression $(ISOLATION)

test:
	./test/run.sh test
# make test on PostgreSQL 17 and 18, each in a cached Debian chroot (root)
test-matrix:
	./test/matrix.sh
demo:
	./test/run.sh demo
bench:
	./test/run.sh bench
# instructions per job (valgrind), after make install: bench/callgrind.sh
callgrind:
	./bench/callgrind.sh
# PostgreSQL's layout: make indent reindents src/, agent/ and test/cron/ in
# place (tools/pgindent.py: pg_bsd_indent with typedefs.list, installing
# Debian's pg-bsd-indent when it is missing); make typedefs writes
# typedefs.list again from the built objects' debug info (tools/typedefs.py).
.PHONY: indent typedefs
indent:
	@bash -c '. test/lib.sh && coord_indent_tool'
	python3 tools/pgindent.py
typedefs: all
	python3 tools/typedefs.py
# failover under load with pg_auto_failover (Debian's packages, installed
# when missing): a monitor and two nodes on loopback ports, a planned
# failover and a crash of the primary; a few minutes, not part of make test
# (.ci/run runs it when time allows): test/ha/run.sh
.PHONY: test-ha
test-ha:
	./test/ha/run.sh
# Debian packages (debian/, tools/deb.sh): postgresql-NN-pg-coord for every
# major whose server headers are installed, and coord-agent, built offline
# into deb/ (build dependencies installed when missing: root or sudo);
# make test-deb installs them into a clean bookworm chroot and runs the
# README's quick start there (test/deb/install.sh, root).
.PHONY: deb test-deb
deb:
	./tools/deb.sh
test-deb:
	./test/deb/install.sh
# the server under valgrind memcheck (and the cron harness under ASan/UBSan);
# slow, not part of make test: test/valgrind/run.sh
.PHONY: test-valgrind
test-valgrind:
	./test/valgrind/run.sh
