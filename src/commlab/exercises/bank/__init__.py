"""The exercise bank: one module per chapter, each defining ``EXERCISES``, a tuple of
:class:`~commlab.exercises.model.Exercise`. Expected answers come from commlab's models."""
