"""Frame logs (.hfr): recorder, reader, replay and the pytest plugin."""
