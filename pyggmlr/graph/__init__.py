"""Graphs and memory (layer 3, above optim/): what compiles, captures or measures a step.

- ``memory.py``: the core's memory counters, MemoryReport, ag_tape_memory and
  ag_estimate_training_memory;
- ``compile.py``: ag_compile and CompiledStep (static graphs: forward, gradients, the optimizer
  step, replayed);
- ``capture.py``: ggmlR's captured functions and steps, eager on the CPU.
"""
