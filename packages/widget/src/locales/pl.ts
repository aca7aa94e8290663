import type { Messages } from "../messages.js"

/** Polish. */
const messages: Messages = {
  tabPost: "Przekaż opinię",
  tabUpdates: "Nowości",
  tabs: "Opinie",
  formTitle: "Powiedz nam, czego potrzebujesz",
  board: "Tablica",
  loadingBoards: "Wczytywanie tablic…",
  noBoards: "Nie ma jeszcze żadnej publicznej tablicy.",
  boardsFailed: "Nie udało się wczytać tablic.",
  retry: "Spróbuj ponownie",
  title: "Tytuł",
  details: "Szczegóły (opcjonalnie)",
  submit: "Wyślij opinię",
  sending: "Wysyłanie…",
  similar: {
    one: "Istnieje już podobny wpis",
    few: "Istnieją już {count} podobne wpisy",
    many: "Istnieje już {count} podobnych wpisów",
    other: "Istnieje już {count} podobnego wpisu"
  },
  newTab: "(otwiera się w nowej karcie)",
  thanks: "Dziękujemy! Twoja opinia „{title}” została opublikowana.",
  sendMore: "Wyślij kolejną opinię",
  pickBoard: "Wybierz tablicę.",
  titleRequired: "Nadaj swojej opinii tytuł.",
  fieldInvalid: "Sprawdź to pole.",
  loading: "Wczytywanie…",
  nothingNew: "Na razie brak nowości.",
  updatesFailed: "Nie udało się wczytać nowości.",
  unreachable: "Nie można połączyć się z usługą opinii z tej strony.",
  busy: {
    one: "Usługa opinii jest przeciążona. Spróbuj ponownie za {seconds} sekundę.",
    few: "Usługa opinii jest przeciążona. Spróbuj ponownie za {seconds} sekundy.",
    many: "Usługa opinii jest przeciążona. Spróbuj ponownie za {seconds} sekund.",
    other: "Usługa opinii jest przeciążona. Spróbuj ponownie za {seconds} sekundy."
  },
  unauthorized: "Nie udało się zweryfikować logowania. Odśwież stronę i spróbuj ponownie.",
  notFound: "Ta tablica już nie istnieje. Odśwież stronę i wybierz inną.",
  checkForm: "Sprawdź formularz.",
  failed: "Coś poszło nie tak po naszej stronie. Spróbuj ponownie.",
  launcher: "Twoja opinia",
  charsLeft: {
    one: "Pozostał {count} znak",
    few: "Pozostały {count} znaki",
    many: "Pozostało {count} znaków",
    other: "Pozostało {count} znaku"
  },
  tooLong: {
    one: "Maksymalnie {count} znak.",
    few: "Maksymalnie {count} znaki.",
    many: "Maksymalnie {count} znaków.",
    other: "Maksymalnie {count} znaku."
  },
  unavailable: "Przekazywanie opinii nie jest dostępne na tej stronie.",
  viewPost: "Zobacz swój wpis"
}
export default messages
