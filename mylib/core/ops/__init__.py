"""Op definitions: each op type's kernel, shape rule, gradient and wrapper in one place."""
