"""GPU verification: the scripts the lead runs on a GPU machine, and their last results."""
