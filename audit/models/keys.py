"""The public keys that evidence is signed with, published for anyone to check signatures."""

import uuid

from django.db import models, transaction
from django.dispatch import Signal
from django.utils import timezone

from .evidence import ManifestChain

# Sent inside the transaction that publishes a key (key=, retires=[key ids]): the rotation's ledger record is
# written by its receiver (audit/ledger/activity_records.py), so that models never import the code that signs.
key_published = Signal()


class SigningKey(models.Model):
    """One public key, Ed25519 or ML-DSA-44: valid from its first signature until the next key of its algorithm
    signs for the first time."""

    key_id = models.CharField(max_length=50, unique=True)
    algorithm = models.CharField(max_length=20, default="ed25519")
    public_key = models.TextField(help_text="base64 of the raw bytes (32 for Ed25519, 1312 for ML-DSA-44)")
    valid_from = models.DateTimeField(default=timezone.now)
    valid_until = models.DateTimeField(null=True, blank=True, help_text="Empty: the key in use")

    class Meta:
        ordering = ["-valid_from"]

    def __str__(self):
        return self.key_id

    @classmethod
    def publish(cls, key_id: str, public_key: str, at=None, algorithm: str = "ed25519") -> bool:
        """Record the key in use (once); the key of its algorithm it replaces is retired from the same moment.
        Returns whether the key was already in use from `at` or before (nothing changed).

        `at`, the time a statement signed with the key gives itself, is kept inside the key's period: a
        worker that took its time before another published the key, or a host still on the old key
        during a rolling restart, signs statements that the published period must cover.
        """
        at = at or timezone.now()
        if cls.objects.filter(key_id=key_id, valid_until__isnull=True, valid_from__lte=at).exists():
            return True
        with transaction.atomic():
            # the ledger's one lock first, as every signer takes it: a rotation is a ledger record
            ManifestChain.objects.select_for_update().get_or_create(pk=1)
            # whatever follows changes the keys: a signer that found its key covered under the old stamp looks again
            ManifestChain.objects.filter(pk=1).update(keys_stamp=uuid.uuid4())
            key, created = cls.objects.get_or_create(
                key_id=key_id, defaults={"public_key": public_key, "valid_from": at, "algorithm": algorithm}
            )
            if created:
                retired = cls.objects.exclude(key_id=key_id).filter(valid_until__isnull=True, algorithm=algorithm)
                retires = sorted(retired.values_list("key_id", flat=True))
                retired.update(valid_until=at)
                key_published.send(sender=cls, key=key, retires=retires)
                return False
            cls.objects.filter(pk=key.pk, valid_from__gt=at).update(valid_from=at)
            cls.objects.filter(pk=key.pk, valid_until__lt=at).update(valid_until=at)
        return False

    def as_json(self) -> dict:
        stamp = lambda at: at.isoformat().replace("+00:00", "Z") if at else None  # noqa: E731
        return {
            "key_id": self.key_id,
            "algorithm": self.algorithm,
            "public_key": self.public_key,
            "valid_from": stamp(self.valid_from),
            "valid_until": stamp(self.valid_until),
        }


class IndexSignature(models.Model):
    """An evidence index's ML-DSA-44 signature, made once per index and key: ML-DSA-44 signing is randomized
    (FIPS 204's hedged mode, the only one `cryptography` offers), and the same evidence exports as the same bytes."""

    sha256 = models.CharField(max_length=64)
    key_id = models.CharField(max_length=50)
    signature = models.TextField(help_text="base64 of the 2420-byte signature")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["sha256", "key_id"], name="index_signature_once_per_key")]
