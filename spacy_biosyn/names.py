"""The name of the component's factory, which is also the name it takes in
a pipeline unless the user gives another: the CLI, the trainers and the
corpus workers find the linker by it. A leaf module, cheap to import."""

PIPE_NAME = "biosyn_linker"
