"""Token and cost accounting of model calls (``usage.cost``, ``homarus usage``)."""
