# The single-node Slurm cluster of tests/test_slurm (see docs/distributed.md).
#   make slurm-deps   install slurmctld, slurmd, slurm-client and munge where
#                     missing (Debian, as root); otherwise say why not and go on:
#                     the Slurm tests then skip with that reason.
#   make test-slurm   only the Slurm launcher tests (they start and stop the
#                     cluster themselves).
# Debian packages (the loop below checks one program of each).
SLURM_PACKAGES := munge slurmctld slurmd slurm-client

.PHONY: slurm-deps test-slurm

slurm-deps:
	@missing=""; \
	for pair in munge:munged slurmctld:slurmctld slurmd:slurmd slurm-client:srun; do \
	  pkg=$${pair%%:*}; prog=$${pair#*:}; \
	  PATH="$$PATH:/usr/sbin:/sbin" command -v $$prog >/dev/null 2>&1 || missing="$$missing $$pkg"; \
	done; \
	if [ -z "$$missing" ]; then \
	  echo "slurm-deps: $(SLURM_PACKAGES) present"; \
	elif [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then \
	  echo "slurm-deps: missing$$missing and no root/apt-get to install them; the Slurm tests will be skipped"; \
	else \
	  echo "slurm-deps: installing$$missing"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -q >/dev/null && \
	  apt-get install -y -q --no-install-recommends $$missing >/dev/null || \
	  echo "slurm-deps: apt-get failed; the Slurm tests will be skipped"; \
	fi

test-slurm: $(STAMP) slurm-deps
	$(PY) -m pytest -q tests/test_slurm
