from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('agents', '0004_scores_traces'),
    ]

    operations = [
        migrations.AddField(
            model_name='threadlease',
            name='reserved_seq',
            field=models.BigIntegerField(default=0),
        ),
    ]
