"""Conda recipes (rattler-build recipe.yaml + variants, selector/, conda-build/), shipped as
package data so that an installed builder can make conda packages."""
