"""Data parallelism's machinery (layer 5, above io/, below fit/); the public module is
pyggmlr.distributed (it adds ag_fit_distributed, which calls ag_fit).

- ``mpi.py``: MPI (mpi4py, optional) and the collectives over the core's packing and averaging;
- ``sync.py``: DistributedOptimizer, ag_distributed_setup, ag_fit(distributed=True)'s FitSync;
- ``replicas.py``: ggmlR's in-process dp_train.
"""
