"""The distributions as a user receives them: the sdist and the wheel built from it."""
