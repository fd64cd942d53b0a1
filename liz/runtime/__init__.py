"""What a turn runs on in one process: the shared services (``services``), putting
a process together (``bootstrap``), the turn's trace (``turn_trace``), the turns
under way, work after the reply (``background``), retrying, and the rules every
input meets (``input_rules``, ``image_urls``)."""
