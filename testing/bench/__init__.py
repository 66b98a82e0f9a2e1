"""One definition per kernel: what every harness measures and checks (interface: :mod:`.case`)."""
