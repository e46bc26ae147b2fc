from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('agents', '0005_choose_any_model'),
    ]

    operations = [
        migrations.AddField(
            model_name='threadlease',
            name='reserved_seq',
            field=models.BigIntegerField(default=0),
        ),
    ]
