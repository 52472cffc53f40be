"""Distribution strategies (MirroredStrategy, MultiWorkerMirroredStrategy,
ParameterServerStrategy) plug into the core through its hooks: the variable-creator
stack (`mylib.core.variables.variable_creator_scope`), device scopes, and the compiled
step. None is provided yet; single-process execution needs none."""
