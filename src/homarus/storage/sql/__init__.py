"""The schema's versioned migrations, ``NNNN_name.sql``, applied in order by ``storage.migrations``."""
