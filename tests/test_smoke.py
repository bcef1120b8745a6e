import rillet


def test_package_exposes_version_and_channel() -> None:
    assert rillet.__version__
    ch = rillet.Channel()
    ch.send(1)
    assert ch.recv() == 1
