#!/bin/sh
# Run before a release.
echo migrating
